/** The tool-facing error text, as Letta words it: `Error executing function f: ValueError: bad`. */
export function formatToolError(functionName: string, type: string, message: string): string {
  return `Error executing function ${functionName}: ${type}: ${message}`;
}
