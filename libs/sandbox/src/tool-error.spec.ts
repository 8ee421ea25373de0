import { formatToolError } from './tool-error';

describe('formatToolError', () => {
  it('words the error as Letta does', () => {
    expect(formatToolError('get_weather', 'ValueError', 'city not found')).toBe(
      'Error executing function get_weather: ValueError: city not found',
    );
  });
});
