import { mergeEnv, plain } from './env-merge';

describe('mergeEnv', () => {
  it('applies sandbox < webhook < agent < user < per-call < reserved', () => {
    const sut = mergeEnv({
      sandbox: plain({ A: 'sandbox', B: 'sandbox', C: 'sandbox', D: 'sandbox', E: 'sandbox', S: 'sandbox' }, true),
      webhook: plain({ B: 'webhook', C: 'webhook', D: 'webhook', E: 'webhook', W: 'webhook' }, true),
      agent: plain({ C: 'agent', D: 'agent', E: 'agent', G: 'agent' }, true),
      user: plain({ D: 'user', E: 'user', U: 'user', TOOLPLANE_AGENT_ID: 'spoofed' }, true),
      call: plain({ E: 'call', TOOLPLANE_ORG_ID: 'spoofed' }, false),
      reserved: plain({ TOOLPLANE_ORG_ID: 'acme' }, false),
    });
    expect(sut.env).toEqual({
      A: 'sandbox',
      B: 'webhook',
      C: 'agent',
      D: 'user',
      E: 'call',
      S: 'sandbox',
      W: 'webhook',
      G: 'agent',
      U: 'user',
      TOOLPLANE_ORG_ID: 'acme',
    });
  });

  it('puts the user over the agent over the org whatever order the layers are given in', () => {
    const sut = mergeEnv({
      user: plain({ K: 'user' }, true),
      agent: plain({ K: 'agent', J: 'agent' }, true),
      sandbox: plain({ K: 'org', J: 'org', I: 'org' }, true),
    });
    expect(sut.env).toEqual({ K: 'user', J: 'agent', I: 'org' });
  });

  it('masks what the winning layer says to mask', () => {
    const sut = mergeEnv({
      sandbox: new Map([
        ['KEEP', { value: 'x', mask: true }],
        ['OPEN', { value: 'y', mask: false }],
      ]),
      agent: new Map([['OVER', { value: 'z', mask: true }]]),
      call: plain({ OVER: 'caller' }, false),
    });
    expect(sut.maskedKeys).toEqual(['KEEP']);
  });

  it('never lets a stored or webhook value set a reserved name', () => {
    const sut = mergeEnv({
      webhook: plain({ TOOLPLANE_TOOL_ID: 'evil' }, true),
      agent: plain({ TOOLPLANE_AGENT_ID: 'evil' }, true),
    });
    expect(sut.env).toEqual({});
  });
});
