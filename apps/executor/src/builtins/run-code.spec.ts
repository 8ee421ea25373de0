import type { Tool } from '@toolplane/contracts';
import { assertLanguage, runCodeCall } from './run-code';

const RUN_CODE = {
  id: 'tool-00000000-0000-5000-8000-000000000000',
  name: 'run_code',
  tool_type: 'letta_builtin',
  source_code: null,
} as unknown as Tool;

describe('run_code', () => {
  it('runs python as it is, in the python harness', () => {
    const sut = runCodeCall(RUN_CODE, { code: 'x = 1\nx', language: 'python' });
    expect(sut).toMatchObject({
      language: 'python',
      args: { code: 'x = 1\nx' },
      tool: { tool_type: 'custom', source_type: 'python', id: RUN_CODE.id },
    });
    expect(sut.tool.source_code).toContain('def run_code(code: str) -> str:');
  });

  it('strips TypeScript types (no checking) and keeps the last expression last, without a "use strict" prologue', () => {
    const sut = runCodeCall(RUN_CODE, {
      code: 'import os from "node:os";\nconst n: number = os.EOL.length as any;\nn',
      language: 'ts',
    });
    expect(sut.tool.source_type).toBe('javascript');
    const code = sut.args.code as string;
    expect(code).not.toMatch(/^"use strict"/);
    expect(code).toContain('require("node:os")');
    expect(code).not.toContain(': number');
    expect(code.trim().endsWith('n;')).toBe(true);
  });

  it('passes plain JavaScript through untouched, and transpiles it only for import/export', () => {
    expect(runCodeCall(RUN_CODE, { code: '1 + 1', language: 'js' }).args.code).toBe('1 + 1');
    expect(runCodeCall(RUN_CODE, { code: 'import fs from "fs";\nfs', language: 'js' }).args.code).toContain(
      'require("fs")',
    );
  });

  it('refuses r and java with LANGUAGE_UNAVAILABLE naming the provider and what it runs', () => {
    expect(() => assertLanguage('python', 'e2b')).not.toThrow();
    expect(() => assertLanguage('r', 'local')).toThrow(
      expect.objectContaining({
        code: 'LANGUAGE_UNAVAILABLE',
        details: { language: 'r', provider: 'local', languages: ['python', 'js', 'ts'] },
      }),
    );
    expect(() => assertLanguage('java', 'modal')).toThrow(expect.objectContaining({ code: 'LANGUAGE_UNAVAILABLE' }));
  });
});
