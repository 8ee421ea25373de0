import { completeUtf8Length, OutputCapture } from './output-capture';

describe('OutputCapture', () => {
  it('keeps everything under the limit', () => {
    const sut = new OutputCapture(10);
    sut.push(Buffer.from('hello'));
    sut.push(Buffer.from('world'));
    expect({ text: sut.text(), truncated: sut.truncated, total: sut.total }).toEqual({
      text: 'helloworld',
      truncated: false,
      total: 10,
    });
  });

  it('keeps the first bytes, counts the rest and flags truncation', () => {
    const sut = new OutputCapture(4);
    sut.push(Buffer.from('abc'));
    sut.push(Buffer.from('defgh'));
    sut.push(Buffer.from('ij'));
    expect({ text: sut.text(), truncated: sut.truncated, total: sut.total }).toEqual({
      text: 'abcd',
      truncated: true,
      total: 10,
    });
  });

  it('drops a multi-byte character cut by the limit instead of emitting half of it', () => {
    const sut = new OutputCapture(4);
    sut.push(Buffer.from('ab€c')); // € is 3 bytes: the limit falls inside it
    expect(sut.text()).toBe('ab');
  });

  it('replaces invalid UTF-8 from the tool with U+FFFD', () => {
    const sut = new OutputCapture(10);
    sut.push(Buffer.from([0x61, 0xff, 0x62]));
    expect(sut.text()).toBe('a\uFFFDb');
  });
});

describe('completeUtf8Length', () => {
  it.each([
    ['ascii', Buffer.from('abc'), 3],
    ['complete 4-byte char', Buffer.from('a😀'), 5],
    ['cut 4-byte char', Buffer.from('a😀').subarray(0, 3), 1],
    ['cut 2-byte char', Buffer.from('é').subarray(0, 1), 0],
  ])('%s', (_name, bytes, expected) => {
    expect(completeUtf8Length(bytes)).toBe(expected);
  });
});
