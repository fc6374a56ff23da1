/**
 * Example arguments for a tool described by a JSON schema (user tools, MCP tools): what the
 * prompt shows as a typical call.
 */

/**
 * The required properties of an object schema (else its first one), each with its first
 * example, its default, its first enum value, or a placeholder of its type (`"..."`, `1`,
 * `true`, `[]`, `{}`). Never throws; a schema without properties gives `{}`.
 */
export function exampleArguments(schema: Record<string, unknown>): Record<string, unknown> {
  const properties = isRecord(schema.properties) ? schema.properties : {};
  const required = Array.isArray(schema.required) ? schema.required.filter((key): key is string => typeof key === 'string') : [];
  const keys = required.length > 0 ? required : Object.keys(properties).slice(0, 1);
  return Object.fromEntries(keys.map((key) => [key, exampleValue(properties[key])]));
}

function exampleValue(property: unknown): unknown {
  if (!isRecord(property)) return '...';
  if (Array.isArray(property.examples) && property.examples.length > 0) return property.examples[0];
  if (property.default !== undefined) return property.default;
  if (Array.isArray(property.enum) && property.enum.length > 0) return property.enum[0];
  const type = Array.isArray(property.type) ? property.type[0] : property.type;
  if (type === 'integer' || type === 'number') return 1;
  if (type === 'boolean') return true;
  if (type === 'array') return [];
  if (type === 'object') return {};
  return '...';
}

/** Whether `value` is a plain object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
