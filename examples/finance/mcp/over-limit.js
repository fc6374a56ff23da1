// intent: find the staff of a department over their travel limit, through the finance MCP server
// param department: string = "engineering" — the department to check
// returns: string[]
const value = (reply) => reply.result; // structured content: { result }
const members = value(await finance_get_members({ department: args.department }));
const expenses = (await gather(members.map(m => finance_get_expenses({ id: m.id })))).map(value);
const limits = value(await finance_get_limits({ levels: unique(members.map(m => m.level)) }));
const total = (list) => list.reduce((sum, e) => sum + e.amount, 0);
return members.filter((m, i) => total(expenses[i]) > limits[m.level]).map(m => m.name);
