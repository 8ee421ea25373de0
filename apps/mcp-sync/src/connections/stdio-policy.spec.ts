import { STDIO_HOME, StdioAllowEntry, StdioPolicy } from './stdio-policy';

const entry = (e: Record<string, unknown>) => StdioAllowEntry.parse(e);
const sut = new StdioPolicy({
  allowed: [
    entry({
      command: '/usr/bin/node',
      args: ['/opt/mcp/everything/dist/index\\.js', 'stdio'],
      read_paths: ['/opt/mcp'],
    }),
    entry({ command: '/usr/bin/node', args: ['/opt/mcp/memory/dist/index\\.js'], env: ['MEMORY_FILE_PATH'] }),
  ],
  isolation: 'bwrap',
  bwrapPath: '/usr/bin/bwrap',
  workRoot: '/tmp/unused',
});

describe('StdioPolicy', () => {
  it('admits exactly an allowlisted program with arguments matching each pattern in full', () => {
    expect(sut.check('/usr/bin/node', ['/opt/mcp/everything/dist/index.js', 'stdio']).read_paths).toEqual(['/opt/mcp']);
    expect(sut.check('/usr/bin/node', ['/opt/mcp/memory/dist/index.js']).env).toEqual(['MEMORY_FILE_PATH']);
  });

  it('refuses other programs, other argument counts, partial matches and injected env, with MCP_COMMAND_REFUSED', () => {
    const refused = (command: string, args: string[], env: Record<string, string> = {}) => {
      try {
        sut.check(command, args, env);
      } catch (e) {
        return (e as { code: string }).code;
      }
      return 'admitted';
    };
    expect(refused('/bin/sh', ['-c', 'id'])).toBe('MCP_COMMAND_REFUSED');
    expect(refused('node', ['/opt/mcp/everything/dist/index.js', 'stdio'])).toBe('MCP_COMMAND_REFUSED');
    expect(refused('/usr/bin/node', ['/opt/mcp/everything/dist/index.js'])).toBe('MCP_COMMAND_REFUSED');
    expect(refused('/usr/bin/node', ['/opt/mcp/everything/dist/index.js', 'stdio', '--inspect'])).toBe(
      'MCP_COMMAND_REFUSED',
    );
    expect(refused('/usr/bin/node', ['/opt/mcp/everything/dist/index.jsX', 'stdio'])).toBe('MCP_COMMAND_REFUSED');
    expect(refused('/usr/bin/node', ['x/opt/mcp/everything/dist/index.js', 'stdio'])).toBe('MCP_COMMAND_REFUSED');
    expect(refused('/usr/bin/node', ['/opt/mcp/everything/dist/index.js', 'stdio'], { LD_PRELOAD: 'x' })).toBe(
      'MCP_COMMAND_REFUSED',
    );
    expect(refused('/usr/bin/node', ['/opt/mcp/everything/dist/index.js', 'stdio'], { NODE_OPTIONS: 'x' })).toBe(
      'MCP_COMMAND_REFUSED',
    );
    expect(refused('/usr/bin/node', ['/opt/mcp/everything/dist/index.js', 'stdio'], { API_KEY: 'x' })).toBe('admitted');
    // An entry with an env list allows those names only.
    expect(refused('/usr/bin/node', ['/opt/mcp/memory/dist/index.js'], { OTHER: 'x' })).toBe('MCP_COMMAND_REFUSED');
  });

  it('takes absolute, normalized paths only', () => {
    expect(StdioAllowEntry.safeParse({ command: 'node' }).success).toBe(false);
    expect(StdioAllowEntry.safeParse({ command: '/usr/bin/../bin/sh' }).success).toBe(false);
    expect(StdioAllowEntry.safeParse({ command: '/usr/bin/node', read_paths: ['relative'] }).success).toBe(false);
    expect(StdioAllowEntry.safeParse({ command: '/usr/bin/node', extra: 1 }).success).toBe(false);
    expect(StdioAllowEntry.safeParse({ command: '/usr/bin/node', read_paths: [`${STDIO_HOME}/data`] }).success).toBe(
      false,
    );
  });

  it('runs an unsafe policy as the plain command with only the server env (no parent env)', async () => {
    const unsafe = new StdioPolicy({
      allowed: [entry({ command: '/usr/bin/node' })],
      isolation: 'unsafe',
      bwrapPath: '',
      workRoot: '',
    });
    expect(await unsafe.spawnSpec('/usr/bin/node', [], { K: 'v' })).toEqual({
      command: '/usr/bin/node',
      args: [],
      env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/tmp', LANG: 'C.UTF-8', K: 'v' },
    });
  });
});
