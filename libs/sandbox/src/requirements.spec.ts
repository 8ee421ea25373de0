import { environmentKey, failedPackage, pipSpecifiers } from './requirements';

describe('pip requirements', () => {
  it('normalizes, pins bare versions, dedupes and sorts', () => {
    expect(
      pipSpecifiers([
        { name: 'Requests', version: '2.31.0' },
        { name: 'attrs' },
        { name: 'numpy', version: '>=1.0,<2' },
        { name: 'attrs', version: null },
      ]),
    ).toEqual(['attrs', 'numpy>=1.0,<2', 'requests==2.31.0']);
  });

  it('refuses options, URLs and paths', () => {
    expect(() => pipSpecifiers([{ name: '--index-url=http://evil' }])).toThrow(/invalid requirement name/);
    expect(() => pipSpecifiers([{ name: 'x @ https://evil/x.whl' }])).toThrow(/invalid requirement name/);
    expect(() => pipSpecifiers([{ name: 'x', version: '1.0 --pre' }])).toThrow(/invalid version/);
  });

  it('keys environments by python version and the sorted set, not by order', () => {
    const a = environmentKey('3.11.2', ['a==1', 'b==2']);
    expect(environmentKey('3.11.2', ['b==2', 'a==1'])).toBe(a);
    expect(environmentKey('3.12.0', ['a==1', 'b==2'])).not.toBe(a);
    expect(environmentKey('3.11.2', ['a==1'])).not.toBe(a);
  });

  it('names the package pip could not install', () => {
    expect(failedPackage('ERROR: No matching distribution found for nothere==9\n', ['a', 'nothere==9'])).toBe(
      'nothere==9',
    );
    expect(failedPackage('something else', ['a'])).toBe('a');
  });
});
