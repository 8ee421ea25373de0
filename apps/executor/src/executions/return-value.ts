/**
 * The seeds' truncation: a return whose text exceeds the tool's return_char_limit is cut and
 * carries a note saying by how much.
 */
export function truncateReturn(value: unknown, limit: number): unknown {
  const text = typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value);
  if (text === undefined || text.length <= limit) return value;
  return `${text.slice(0, limit)}... [NOTE: function output was truncated since it exceeded the character limit (${text.length} > ${limit})]`;
}
