import { BUILD_CA_MOUNT } from './build-process';
import { requirementName } from './requirements';
import { pipInstallCommand, withoutCredentials } from './venv.builder';
import { npmInstallCommand } from './npm.builder';

describe('build commands: index settings reach pip and npm', () => {
  it('gives pip the CA bundle and the proxy, as options and as PIP_CERT / PIP_PROXY (for the pip an sdist build starts)', () => {
    const sut = pipInstallCommand(
      { indexUrl: 'https://pypi.corp/simple' },
      { caBundle: '/w/build-ca-1.pem', proxy: 'http://proxy.corp:3128' },
      ['a==1'],
      false,
    );
    const c = sut.command.join(' ');
    expect(c).toContain(`--cert ${BUILD_CA_MOUNT}`);
    expect(c).toContain('--proxy http://proxy.corp:3128');
    expect(c).toContain('--index-url https://pypi.corp/simple');
    expect(sut.command.slice(-2)).toEqual(['--', 'a==1']);
    expect(sut.env).toEqual({ PIP_CERT: BUILD_CA_MOUNT, PIP_PROXY: 'http://proxy.corp:3128' });
    const plain = pipInstallCommand({ noIndex: true, findLinks: ['/wheels'] }, {}, ['a'], true);
    expect(plain.command).not.toContain('--cert');
    expect(plain.command).not.toContain('--proxy');
    expect(plain.command.join(' ')).toContain('--only-binary :all:');
    expect(plain.env).toEqual({});
  });

  it('gives npm the CA bundle (cafile) and the proxy for http and https', () => {
    const sut = npmInstallCommand(
      { registry: 'https://npm.corp/' },
      { caBundle: '/w/build-ca-1.pem', proxy: 'http://proxy.corp:3128' },
      ['left-pad@1.3.0'],
      false,
    ).join(' ');
    expect(sut).toContain(`--cafile ${BUILD_CA_MOUNT}`);
    expect(sut).toContain('--proxy http://proxy.corp:3128 --https-proxy http://proxy.corp:3128');
    expect(sut).toContain('--ignore-scripts');
    expect(sut.endsWith('-- left-pad@1.3.0')).toBe(true);
    expect(npmInstallCommand({ offline: true }, {}, ['/t/a-1.0.0.tgz'], true).join(' ')).not.toMatch(
      /--cafile|--proxy|--ignore-scripts/,
    );
  });

  it('names the package of a specifier and keeps credentials out of progress lines', () => {
    expect(
      ['not-in-wheelhouse==9.9', 'numpy>=1,<2', 'x[extra]>=1', '@scope/name@^1', 'left-pad@1.3.0', 'plain'].map(
        requirementName,
      ),
    ).toEqual(['not-in-wheelhouse', 'numpy', 'x', '@scope/name', 'left-pad', 'plain']);
    expect(withoutCredentials('Looking in indexes: https://user:s3cret@pypi.corp/simple')).toBe(
      'Looking in indexes: https://***@pypi.corp/simple',
    );
  });
});
