import { describe, expect, it } from 'vitest';
import { FetchHeaders } from '../../src/llm/fetch-headers';

describe('FetchHeaders', () => {
  it('reads names in any case, joins the values of a name, and lists names in lower case, sorted', () => {
    const headers = new FetchHeaders({ 'X-Zeta': '1', Accept: 'text/plain' });
    headers.append('accept', 'application/json');
    expect(headers.get('ACCEPT')).toBe('text/plain, application/json');
    expect(headers.has('x-zeta')).toBe(true);
    expect([...headers]).toEqual([
      ['accept', 'text/plain, application/json'],
      ['x-zeta', '1'],
    ]);
    expect([...headers.keys()]).toEqual(['accept', 'x-zeta']);
    expect([...headers.values()]).toEqual(['text/plain, application/json', '1']);
  });

  it('replaces with set, removes with delete, and answers null for a missing name', () => {
    const headers = new FetchHeaders([['a', '1'], ['a', '2']]);
    headers.set('A', '3');
    expect(headers.get('a')).toBe('3');
    headers.delete('a');
    expect(headers.get('a')).toBeNull();
    expect(headers.has('a')).toBe(false);
  });

  it('keeps each set-cookie apart when iterated, and trims whitespace around values', () => {
    const headers = new FetchHeaders();
    headers.append('Set-Cookie', ' a=1 ');
    headers.append('set-cookie', 'b=2\t');
    expect(headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect([...headers.entries()]).toEqual([
      ['set-cookie', 'a=1'],
      ['set-cookie', 'b=2'],
    ]);
  });

  it('copies another Headers, its own or Node’s, and hands each pair to forEach', () => {
    const copy = new FetchHeaders(new FetchHeaders({ b: '2', a: '1' }));
    const fromNode = new FetchHeaders(new Headers({ c: '3' }));
    const seen: string[] = [];
    copy.forEach((value, name, headers) => seen.push(`${name}=${value}:${headers === copy}`));
    expect(seen).toEqual(['a=1:true', 'b=2:true']);
    expect(fromNode.get('c')).toBe('3');
    expect(Object.prototype.toString.call(copy)).toBe('[object Headers]');
  });

  it('is accepted by Node’s own fetch classes as a list of pairs', () => {
    const native = new Headers(new FetchHeaders({ 'content-type': 'application/json' }));
    expect(native.get('Content-Type')).toBe('application/json');
  });

  it('refuses a name that is no HTTP token, a value with a line break, and a malformed pair', () => {
    expect(() => new FetchHeaders({ 'bad name': 'x' })).toThrow(TypeError);
    expect(() => new FetchHeaders().set('x', 'a\r\nInjected: yes')).toThrow(/line break/);
    expect(() => new FetchHeaders([['only-a-name']] as unknown as [string, string][])).toThrow(/pair/);
  });
});
