// intent: find engineering staff over their travel limit
const members = await get_members({ department: "engineering" });
const expenses = await gather(members.map(m => get_expenses({ id: m.id })));
const limits = await get_limits({ levels: unique(members.map(m => m.level)) });
const total = (list) => list.reduce((sum, e) => sum + e.amount, 0);
print(members.filter((m, i) => total(expenses[i]) > limits[m.level]).map(m => m.name));
