import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { admit, describeRule, pathGuard, type AdmissionRequest, type PolicyRule } from '../../src/policy/admit';
import { useTempWorkspace } from '../support/tool-context';

const program = 'program:3f9a1c2b';

function request(fields: Partial<AdmissionRequest> = {}): AdmissionRequest {
  return { principal: 'model', tool: 'read', ...fields };
}

describe('admit', () => {
  it('allows a call that no rule matches, without naming a rule', () => {
    expect(admit(request(), [])).toEqual({ action: 'allow' });
    expect(admit(request({ tool: 'save' }), [{ tool: 'read', action: 'deny' }])).toEqual({ action: 'allow' });
  });

  it('lets the first matching rule decide', () => {
    const rules: PolicyRule[] = [
      { tool: 'read', resource: 'docs/**', action: 'allow' },
      { tool: 'read', action: 'deny', reason: 'no reading' },
      { tool: 'read', action: 'ask' },
    ];
    expect(admit(request({ resource: 'docs/a.md' }), rules)).toEqual({ action: 'allow', rule: 0 });
    expect(admit(request({ resource: 'src/a.ts' }), rules)).toEqual({ action: 'deny', reason: 'no reading', rule: 1 });
    expect(admit(request(), rules)).toEqual({ action: 'deny', reason: 'no reading', rule: 1 });
  });

  it('matches the tool as a glob', () => {
    const rules: PolicyRule[] = [{ tool: '{save,append,patch}', action: 'ask', reason: 'writes' }];
    expect(admit(request({ tool: 'patch' }), rules)).toMatchObject({ action: 'ask' });
    expect(admit(request({ tool: 'read' }), rules)).toEqual({ action: 'allow' });
    expect(admit(request({ tool: 'get_expenses' }), [{ tool: 'get_*', action: 'deny' }])).toMatchObject({ action: 'deny' });
    expect(admit(request({ tool: 'anything' }), [{ tool: '*', action: 'deny' }])).toMatchObject({ action: 'deny' });
  });

  it('matches the principal as a glob: program:* covers every program and not the model', () => {
    const rules: PolicyRule[] = [{ tool: '*', principal: 'program:*', action: 'deny' }];
    expect(admit(request({ principal: program }), rules)).toMatchObject({ action: 'deny' });
    expect(admit(request({ principal: 'model' }), rules)).toEqual({ action: 'allow' });
    expect(admit(request({ principal: 'python' }), rules)).toEqual({ action: 'allow' });
    expect(admit(request({ principal: 'python' }), [{ tool: '*', principal: 'python', action: 'ask' }])).toMatchObject({ action: 'ask' });
  });

  it('matches resources as path globs, dotfiles included', () => {
    const rules: PolicyRule[] = [{ tool: 'read', resource: 'secrets/**', action: 'deny' }];
    for (const resource of ['secrets', 'secrets/key.txt', 'secrets/.env', 'secrets/deep/.ssh/id_rsa']) {
      expect(admit(request({ resource }), rules), resource).toMatchObject({ action: 'deny' });
    }
    for (const resource of ['secretsx/key.txt', 'src/secrets.ts', 'docs/secrets/key.txt']) {
      expect(admit(request({ resource }), rules), resource).toEqual({ action: 'allow' });
    }
    const anywhere: PolicyRule[] = [{ tool: 'read', resource: '**/.env', action: 'deny' }];
    expect(admit(request({ resource: '.env' }), anywhere)).toMatchObject({ action: 'deny' });
    expect(admit(request({ resource: 'app/config/.env' }), anywhere)).toMatchObject({ action: 'deny' });
    expect(admit(request({ resource: 'app/config/.envrc' }), anywhere)).toEqual({ action: 'allow' });
    expect(admit(request({ resource: '/etc/passwd' }), [{ tool: 'read', resource: '/etc/**', action: 'deny' }])).toMatchObject({ action: 'deny' });
  });

  it('matches command lines and JSON arguments, where * must cross / and quotes are plain text', () => {
    const shell: PolicyRule[] = [{ tool: 'shell', resource: 'rm *', action: 'ask' }];
    expect(admit(request({ tool: 'shell', resource: 'rm -rf /tmp/build' }), shell)).toMatchObject({ action: 'ask' });
    expect(admit(request({ tool: 'shell', resource: 'ls /tmp' }), shell)).toEqual({ action: 'allow' });
    const json: PolicyRule[] = [{ tool: 'get_expenses', resource: '*"id":"e1"*', action: 'deny' }];
    expect(admit(request({ tool: 'get_expenses', resource: '{"id":"e1","year":2024}' }), json)).toMatchObject({ action: 'deny' });
    expect(admit(request({ tool: 'get_expenses', resource: '{"id":"e2"}' }), json)).toEqual({ action: 'allow' });
  });

  it('never matches a call without a resource to a rule that names one', () => {
    const rules: PolicyRule[] = [{ tool: '*', resource: '**', action: 'deny' }];
    expect(admit(request(), rules)).toEqual({ action: 'allow' });
    expect(admit(request({ resource: 'a.txt' }), rules)).toMatchObject({ action: 'deny' });
  });

  it('matches the intent case-insensitively, * spanning spaces and slashes', () => {
    const rules: PolicyRule[] = [{ tool: '*', intent: '*delete*', action: 'ask', reason: 'deleting needs a yes' }];
    expect(admit(request({ intent: 'Delete old logs under /var/log' }), rules)).toEqual({ action: 'ask', reason: 'deleting needs a yes', rule: 0 });
    expect(admit(request({ intent: 'we will DELETE them' }), rules)).toMatchObject({ action: 'ask' });
    expect(admit(request({ intent: 'count lines' }), rules)).toEqual({ action: 'allow' });
    expect(admit(request(), rules)).toEqual({ action: 'allow' });
    expect(admit(request({ intent: 'a' }), [{ tool: '*', intent: '?', action: 'deny' }])).toMatchObject({ action: 'deny' });
    expect(admit(request({ intent: 'ab' }), [{ tool: '*', intent: '?', action: 'deny' }])).toEqual({ action: 'allow' });
  });

  it('treats regex characters in an intent pattern literally', () => {
    const rules: PolicyRule[] = [{ tool: '*', intent: 'sum (a+b)*', action: 'deny' }];
    expect(admit(request({ intent: 'sum (a+b) of all rows' }), rules)).toMatchObject({ action: 'deny' });
    expect(admit(request({ intent: 'sum aab of all rows' }), rules)).toEqual({ action: 'allow' });
  });

  it('matches a call without an intent to intent = "*"', () => {
    expect(admit(request(), [{ tool: '*', intent: '*', action: 'deny' }])).toMatchObject({ action: 'deny' });
  });

  it('needs every field of a rule to match', () => {
    const rules: PolicyRule[] = [{ tool: 'read', resource: 'secrets/**', principal: 'program:*', intent: '*', action: 'deny' }];
    expect(admit(request({ principal: program, resource: 'secrets/key.txt' }), rules)).toMatchObject({ action: 'deny' });
    expect(admit(request({ principal: 'model', resource: 'secrets/key.txt' }), rules)).toEqual({ action: 'allow' });
    expect(admit(request({ principal: program, tool: 'grep', resource: 'secrets/key.txt' }), rules)).toEqual({ action: 'allow' });
    expect(admit(request({ principal: program, resource: 'public/key.txt' }), rules)).toEqual({ action: 'allow' });
  });

  it('gives the rule’s reason, or one naming the rule and its patterns', () => {
    const rules: PolicyRule[] = [
      { tool: 'save', action: 'allow' },
      { tool: 'read', resource: 'secrets/**', action: 'deny' },
      { tool: 'shell', principal: 'program:*', action: 'ask' },
      { tool: 'patch', action: 'deny', reason: 'patches are reviewed by hand' },
    ];
    expect(admit(request({ resource: 'secrets/a' }), rules)).toEqual({
      action: 'deny',
      reason: 'denied by policy rule 2 (tool "read", resource "secrets/**")',
      rule: 1,
    });
    expect(admit(request({ tool: 'shell', principal: program }), rules)).toEqual({
      action: 'ask',
      reason: 'confirmation required by policy rule 3 (tool "shell", principal "program:*")',
      rule: 2,
    });
    expect(admit(request({ tool: 'patch' }), rules)).toEqual({ action: 'deny', reason: 'patches are reviewed by hand', rule: 3 });
    expect(describeRule({ tool: '*', intent: '*rm*', action: 'deny' }, 0)).toBe('policy rule 1 (tool "*", intent "*rm*")');
  });
});

describe("the user's rules and a project's", () => {
  const user = (rule: PolicyRule): PolicyRule => ({ ...rule, source: 'user' });
  const project = (rule: PolicyRule): PolicyRule => ({ ...rule, source: 'project' });
  const secret = request({ resource: 'secret/key.txt' });

  it("keeps a user's deny against a project's allow-all, wherever the project's rule stands", () => {
    const denySecret = user({ tool: 'read', resource: 'secret/**', action: 'deny' });
    const allowAll = project({ tool: '*', action: 'allow' });
    for (const rules of [[allowAll, denySecret], [denySecret, allowAll]]) {
      expect(admit(secret, rules)).toEqual({
        action: 'deny',
        reason: 'denied by policy rule 1 of the user\'s config.toml (tool "read", resource "secret/**")',
        rule: rules.indexOf(denySecret),
      });
      expect(admit(request({ resource: 'src/a.ts' }), rules)).toEqual({ action: 'allow', rule: rules.indexOf(allowAll) });
    }
  });

  it("lets a project's deny restrict what the user allows, and names the project's rule", () => {
    const rules = [
      user({ tool: '*', action: 'allow' }),
      project({ tool: 'save', action: 'allow' }),
      project({ tool: 'read', resource: 'secret/**', action: 'deny' }),
    ];
    expect(admit(secret, rules)).toEqual({ action: 'deny', reason: 'denied by policy rule 2 of fence.toml (tool "read", resource "secret/**")', rule: 2 });
    expect(admit(request({ resource: 'src/a.ts' }), rules)).toEqual({ action: 'allow', rule: 0 });
  });

  it("asks when the user asks and the project allows, and when the project asks and the user allows", () => {
    const userAsks = [project({ tool: '*', action: 'allow' }), user({ tool: 'read', action: 'ask' })];
    expect(admit(secret, userAsks)).toEqual({ action: 'ask', reason: 'confirmation required by policy rule 1 of the user\'s config.toml (tool "read")', rule: 1 });
    const projectAsks = [user({ tool: 'read', action: 'allow' }), project({ tool: 'read', action: 'ask', reason: 'the project wants a yes' })];
    expect(admit(secret, projectAsks)).toEqual({ action: 'ask', reason: 'the project wants a yes', rule: 1 });
    // A user's deny beats a project's ask; each list has one first match only.
    const both = [user({ tool: 'read', action: 'deny' }), project({ tool: 'read', action: 'ask' }), project({ tool: 'read', action: 'deny' })];
    expect(admit(secret, both)).toMatchObject({ action: 'deny', rule: 0 });
  });

  it('reads rules without a source as the user\'s', () => {
    const rules: PolicyRule[] = [project({ tool: '*', action: 'allow' }), { tool: 'read', resource: 'secret/**', action: 'deny' }];
    expect(admit(secret, rules)).toEqual({ action: 'deny', reason: 'denied by policy rule 1 (tool "read", resource "secret/**")', rule: 1 });
  });
});

describe('pathGuard', () => {
  const workspace = useTempWorkspace('fence-policy-');

  it('leaves out denied and asked paths, keeps the rest, for the given principal and tool only', async () => {
    const rules: PolicyRule[] = [
      { tool: 'read', resource: 'secrets/**', principal: 'program:*', action: 'deny' },
      { tool: 'read', resource: '*.pem', action: 'ask' },
      { tool: 'read', resource: 'logs/**', intent: '*audit*', action: 'deny' },
    ];
    const guard = pathGuard(workspace(), rules, program, 'count lines', 'read');
    expect(guard('src/app.ts')).toBe(true);
    expect(guard('secrets/.env')).toBe(false);
    expect(guard('server.pem')).toBe(false);
    expect(guard('logs/today.log')).toBe(true);
    expect(pathGuard(workspace(), rules, program, 'audit the logs', 'read')('logs/today.log')).toBe(false);
    expect(pathGuard(workspace(), rules, 'model', undefined, 'read')('secrets/.env')).toBe(true);
    expect(pathGuard(workspace(), rules, program, undefined, 'grep')('secrets/.env')).toBe(true);
    expect(pathGuard(workspace(), [], program, undefined, 'read')('secrets/.env')).toBe(true);
  });

  it("leaves out a file the user denies even when the project allows everything", () => {
    const rules: PolicyRule[] = [
      { tool: 'glob', resource: 'drafts/**', action: 'deny', source: 'project' },
      { tool: '*', action: 'allow', source: 'project' },
      { tool: 'glob', resource: 'secret/**', action: 'deny', source: 'user' },
    ];
    const guard = pathGuard(workspace(), rules, 'model', undefined, 'glob');
    expect(guard('secret/key.txt')).toBe(false);
    expect(guard('drafts/a.md')).toBe(false);
    expect(guard('src/app.ts')).toBe(true);
  });

  it('sees through .. and symlinks', async () => {
    await mkdir(join(workspace(), 'secrets'));
    await writeFile(join(workspace(), 'secrets/key.txt'), 'k');
    await symlink('secrets', join(workspace(), 'link'));
    const guard = pathGuard(workspace(), [{ tool: 'read', resource: 'secrets/**', action: 'deny' }], program, undefined, 'read');
    expect(guard('link/key.txt')).toBe(false);
    expect(guard('docs/../secrets/key.txt')).toBe(false);
    expect(guard(join(workspace(), 'secrets/key.txt'))).toBe(false);
    expect(guard('docs/key.txt')).toBe(true);
  });
});
