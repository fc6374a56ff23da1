import type { KeySource } from './models';
import type { Provider, StreamEvent } from './provider';

/**
 * What to check when a server refuses the key (HTTP 401 or 403): the variable that holds it,
 * or, when none was set and a placeholder was sent, the variable to set.
 */
export function refusedKeyHint(source: KeySource): string {
  return source.set ? `check ${source.variable}` : `no key was sent: set ${source.variable}`;
}

/**
 * `provider` with the `done` event of a refused key (`errorKind: 'auth'`) naming what to check,
 * e.g. `HTTP 401 from anthropic: invalid x-api-key (check ANTHROPIC_API_KEY)`. Every other
 * event passes unchanged.
 */
export function namingRefusedKey(provider: Provider, source: KeySource): Provider {
  return {
    name: provider.name,
    stream: (request) => withHint(provider.stream(request), refusedKeyHint(source)),
    ...(provider.preconnect ? { preconnect: provider.preconnect } : {}),
  };
}

async function* withHint(events: AsyncIterable<StreamEvent>, hint: string): AsyncGenerator<StreamEvent, void, undefined> {
  for await (const event of events) {
    if (event.type === 'done' && event.errorKind === 'auth' && event.error !== undefined) yield { ...event, error: `${event.error} (${hint})` };
    else yield event;
  }
}
