import { describe, expect, it } from 'vitest';
import { webHosts } from '../../src/web/web-hosts';

const url = (text: string) => new URL(text);

describe('webHosts', () => {
  it('lists names, subdomains by wildcard (not the name itself), ports and addresses', () => {
    const hosts = webHosts(['docs.example.org', '*.python.org', 'api.example.com:8443', '127.0.0.1:8000', '[::1]']);
    expect(hosts.listed(url('https://docs.example.org/a'))).toBe(true);
    expect(hosts.listed(url('https://DOCS.Example.org/a'))).toBe(true);
    expect(hosts.listed(url('https://docs.python.org/3/'))).toBe(true);
    expect(hosts.listed(url('https://python.org/'))).toBe(false);
    expect(hosts.listed(url('https://evilpython.org/'))).toBe(false);
    expect(hosts.listed(url('https://docs.example.org.evil.com/'))).toBe(false);
    expect(hosts.listed(url('https://api.example.com:8443/'))).toBe(true);
    expect(hosts.listed(url('https://api.example.com/'))).toBe(false);
    expect(hosts.listed(url('http://127.0.0.1:8000/'))).toBe(true);
    expect(hosts.listed(url('http://127.0.0.1:8001/'))).toBe(false);
    expect(hosts.listed(url('http://[::1]:9/'))).toBe(true);
    expect(webHosts([]).listed(url('https://docs.example.org/'))).toBe(false);
  });

  // Every address that is not on the public internet, written each way an attacker might.
  const notPublic = [
    '127.0.0.1',
    '127.1.2.3',
    '0.0.0.0',
    '10.0.0.1',
    '10.255.255.255',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '100.127.255.255',
    '::1',
    '::',
    'fe80::1',
    'febf::1',
    'fc00::1',
    'fd12:3456::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:169.254.169.254',
    '::ffff:10.0.0.1',
    '::ffff:192.168.0.1',
  ];
  const publicAddresses = ['93.184.216.34', '8.8.8.8', '172.32.0.1', '100.128.0.1', '192.169.0.1', '2606:4700::1111', '::ffff:8.8.8.8'];

  it.each(notPublic)('refuses a listed name that resolves to %s', (address) => {
    const hosts = webHosts(['docs.example.org', '*']);
    expect(hosts.addressRefusal(url('https://docs.example.org/'), [address])).toMatch(/^docs\.example\.org resolves to .+, an address of this machine or of a private network/);
    // A name nobody listed (a person said yes to it) is held to the same.
    expect(webHosts([]).addressRefusal(url('https://other.example.net/'), [address])).toMatch(/resolves to/);
  });

  it.each(publicAddresses)('lets a listed name reach the public address %s', (address) => {
    expect(webHosts(['docs.example.org']).addressRefusal(url('https://docs.example.org/'), [address])).toBeUndefined();
    expect(webHosts([]).addressRefusal(url('https://docs.example.org/'), [address])).toBeUndefined();
  });

  it('refuses a name when any of its addresses is private (a rebinding answer mixed with a public one)', () => {
    expect(webHosts(['docs.example.org']).addressRefusal(url('https://docs.example.org/'), ['93.184.216.34', '127.0.0.1'])).toMatch(/resolves to 127\.0\.0\.1/);
  });

  it('lets a private: entry or a listed address reach a private address, and nothing else', () => {
    const hosts = webHosts(['private:wiki.corp.example', '127.0.0.1:8000', '[::1]:9000']);
    expect(hosts.addressRefusal(url('https://wiki.corp.example/'), ['10.1.2.3'])).toBeUndefined();
    expect(hosts.addressRefusal(url('http://127.0.0.1:8000/'), ['127.0.0.1'])).toBeUndefined();
    expect(hosts.addressRefusal(url('http://[::1]:9000/'), ['::1'])).toBeUndefined();
    expect(hosts.addressRefusal(url('http://127.0.0.1:8001/'), ['127.0.0.1'])).toMatch(/resolves to 127\.0\.0\.1/);
    expect(hosts.addressRefusal(url('http://localhost:8000/'), ['127.0.0.1'])).toMatch(/^localhost resolves to 127\.0\.0\.1/);
  });

  it('refuses a name without an address', () => {
    expect(webHosts(['docs.example.org']).addressRefusal(url('https://docs.example.org/'), [])).toBe('docs.example.org has no address');
  });
});
