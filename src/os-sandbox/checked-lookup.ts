import { isIP, type LookupFunction } from 'node:net';

/**
 * A `lookup` for `net.connect` and `http.request` that answers with `addresses`, the ones a
 * caller checked, and asks no resolver: Node tries them in turn (IPv6 and IPv4, as it does for
 * a name), and never an address it was not given, so a second DNS answer cannot slip in between
 * the check and the connection.
 */
export function checkedLookup(addresses: readonly string[]): LookupFunction {
  const found = addresses.map((address) => ({ address, family: isIP(address) }));
  return (_host, options, callback) => {
    const first = found[0];
    if (options.all) (callback as (error: null, found: { address: string; family: number }[]) => void)(null, found);
    else if (first) callback(null, first.address, first.family);
  };
}
