// Injected into the bundles that hold a provider SDK (see providerSdk in build.mjs), so that a
// request never loads Node's own fetch classes, whose first use costs about as much as
// starting Node (see src/llm/fetch-headers.ts): wherever the SDKs' code says `Headers`, it
// gets fence's FetchHeaders, and where it says `FormData`, a class with no instances.
export { FetchHeaders as Headers } from '../src/llm/fetch-headers.ts';

/**
 * The SDKs test every request body with `body instanceof FormData`, and make forms only to
 * upload files, which fence never does: here no body is a form, and making one says why.
 */
export class FormData {
  constructor() {
    throw new TypeError('fence sends no forms: file uploads are not supported');
  }
}
