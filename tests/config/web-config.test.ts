import { describe, expect, it } from 'vitest';
import { mergeWebConfig } from '../../src/config/web-config';

function merge(user: Parameters<typeof mergeWebConfig>[0], project: Parameters<typeof mergeWebConfig>[1]) {
  const ignored: string[] = [];
  return { ...mergeWebConfig(user, project, 'fence.toml', ignored), ignored };
}

describe('mergeWebConfig', () => {
  it("takes the user's list when the project has none, with search off by default", () => {
    expect(merge({ allow: ['docs.example.org'] }, {})).toEqual({ allow: ['docs.example.org'], search: false, ignored: [] });
  });

  it("keeps the project's entries that the user's list covers, and says which it ignored", () => {
    const merged = merge(
      { allow: ['docs.example.org', '*.python.org', 'api.example.com', '*', '127.0.0.1:8000'] },
      { allow: ['docs.python.org', 'api.example.com:443', 'news.example.net', '127.0.0.1:8000', 'private:localhost', '10.0.0.5', 'private:wiki.corp.example', '*'] },
    );
    expect(merged.allow).toEqual(['docs.python.org', 'api.example.com:443', 'news.example.net', '127.0.0.1:8000', '*']);
    expect(merged.ignored).toEqual([
      "fence.toml: [web] allow: private:localhost, 10.0.0.5, private:wiki.corp.example ignored: not among the hosts your own config.toml allows",
    ]);
  });

  it("cannot widen a user's list: a wildcard under a name, a name beside a port, or any host against none", () => {
    expect(merge({ allow: ['docs.example.org'] }, { allow: ['*.example.org', 'example.org'] }).allow).toEqual([]);
    expect(merge({ allow: ['api.example.com:443'] }, { allow: ['api.example.com'] }).allow).toEqual([]);
    expect(merge({}, { allow: ['docs.example.org'] }).allow).toEqual([]);
    expect(merge({ allow: ['*.example.org'] }, { allow: ['*.docs.example.org', 'example.org'] }).allow).toEqual(['*.docs.example.org']);
  });

  it('lets a project empty the list', () => {
    expect(merge({ allow: ['docs.example.org'] }, { allow: [] })).toEqual({ allow: [], search: false, ignored: [] });
  });

  it('lets a project turn search off and lower the time cap, not turn search on or raise it', () => {
    expect(merge({ search: true, timeout_seconds: 20 }, { search: false, timeout_seconds: 5 })).toMatchObject({ search: false, timeoutSeconds: 5 });
    const refused = merge({ timeout_seconds: 20 }, { search: true, timeout_seconds: 60 });
    expect(refused).toMatchObject({ search: false, timeoutSeconds: 20 });
    expect(refused.ignored).toEqual(['fence.toml: [web] search = true ignored: only your own config.toml (or --web-search) turns web search on']);
  });
});
