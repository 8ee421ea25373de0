import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { resolveRecord, resolveTemplate, templateNames } from './templates';

describe('templates', () => {
  it('finds every variable name', () => {
    expect(templateNames(['Bearer {{TOKEN}}', '{{ REGION | eu }}-{{TOKEN}}', 'plain'])).toEqual(['TOKEN', 'REGION']);
  });

  it('resolves values and defaults, and names (never shows) what is missing', () => {
    expect(resolveTemplate('Bearer {{TOKEN}}', { TOKEN: 's3cret' }, 'h')).toBe('Bearer s3cret');
    expect(resolveTemplate('{{REGION | eu-west-1}}', {}, 'h')).toBe('eu-west-1');
    expect(resolveTemplate('{{REGION|}}x', {}, 'h')).toBe('x');
    expect(resolveRecord({ A: '{{X}}', B: 'b' }, { X: '1' }, 'env')).toEqual({ A: '1', B: 'b' });
    try {
      resolveTemplate('{{TOKEN}} {{OTHER}}', { OTHER: 'visible-value' }, 'header Authorization');
      throw new Error('should have thrown');
    } catch (e) {
      expect(e).toBeInstanceOf(ToolplaneError);
      expect((e as ToolplaneError).code).toBe(ErrorCode.SECRET_NOT_FOUND);
      expect((e as ToolplaneError).message).toContain('{{TOKEN}}');
      expect((e as ToolplaneError).message).not.toContain('visible-value');
    }
  });
});
