import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { generatedDocs } from './docs';
import { withBlock } from './markdown';

const root = join(__dirname, '..', '..');

describe('generated docs', () => {
  const pages = generatedDocs(root, (app) => require(join(root, 'apps', app, 'src', `${app}.config.ts`)));

  it.each([...pages.keys()])(
    '%s is up to date (run `npm run docs` after changing the contracts, an error code or a config)',
    (file) => {
      const onDisk = existsSync(join(root, file)) ? readFileSync(join(root, file), 'utf8') : '(missing)';
      expect(onDisk).toBe(pages.get(file));
    },
  );

  it('covers the subjects, the error codes and every app with an env schema', () => {
    expect([...pages.keys()]).toEqual(
      expect.arrayContaining([
        'docs/subjects.md',
        'docs/public-api.md',
        'docs/config/common.md',
        'docs/config/executor.md',
        'docs/config/mcp-sync.md',
      ]),
    );
    expect(pages.get('docs/public-api.md')).toContain('| `PROVIDER_UNAVAILABLE` |');
    expect(pages.get('docs/subjects.md')).toContain('| `toolplane.v1.tools.execute` | `executor` |');
    expect(pages.get('docs/config/web-tools.md')).toContain('| `WEB_FETCH_MAX_BYTES` | integer ≥ 1024 | `5242880` |');
  });

  it('replaces only its block and keeps the hand-written prose around it', () => {
    const page =
      '# Title\n\nprose before\n\n<!-- generated:start x -->\nold\n<!-- generated:end x -->\n\nprose after\n';
    const sut = withBlock(page, 'x', 'new', 'here');
    expect(sut).toMatch(/^# Title\n\nprose before\n\n<!-- generated:start x -->\n/);
    expect(sut).toContain('\nnew\n');
    expect(sut).not.toContain('old');
    expect(sut).toMatch(/<!-- generated:end x -->\n\nprose after\n$/);
    expect(withBlock(sut, 'x', 'new', 'here')).toBe(sut);
  });
});
