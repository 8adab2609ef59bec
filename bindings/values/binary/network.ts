/**
 * Binary forms of inet, cidr, macaddr and macaddr8, printed as PostgreSQL's
 * output functions print them, so text and binary give the same string.
 *
 *   inet/cidr  UInt8 family (2 IPv4, 3 IPv6), UInt8 bits, UInt8 is_cidr, UInt8 nb, nb address bytes
 *   macaddr    6 bytes; macaddr8 8 bytes
 */
import { HEX, invalid } from "../bytes.ts";

const FAMILY_INET = 2;
const FAMILY_INET6 = 3;

function ipv4(b: Uint8Array, p: number): string {
  return `${b[p]}.${b[p + 1]}.${b[p + 2]}.${b[p + 3]}`;
}

/**
 * IPv6 as PostgreSQL prints it: groups in lower-case hex without leading
 * zeros; the first longest run of two or more zero groups becomes `::`;
 * `::a.b.c.d` (exactly six leading zero groups: `::0.1.0.0`, but `::2`) and
 * `::ffff:a.b.c.d` end in dotted IPv4.
 */
function ipv6(b: Uint8Array, p: number): string {
  const w = new Array<number>(8);
  for (let i = 0; i < 8; i++) w[i] = (b[p + 2 * i]! << 8) | b[p + 2 * i + 1]!;
  let bestBase = -1;
  let bestLen = 0;
  let curBase = -1;
  let curLen = 0;
  for (let i = 0; i < 8; i++) {
    if (w[i] === 0) {
      if (curBase === -1) {
        curBase = i;
        curLen = 1;
      } else curLen++;
    } else if (curBase !== -1) {
      if (bestBase === -1 || curLen > bestLen) {
        bestBase = curBase;
        bestLen = curLen;
      }
      curBase = -1;
    }
  }
  if (curBase !== -1 && (bestBase === -1 || curLen > bestLen)) {
    bestBase = curBase;
    bestLen = curLen;
  }
  if (bestBase !== -1 && bestLen < 2) bestBase = -1;
  let s = "";
  for (let i = 0; i < 8; i++) {
    if (bestBase !== -1 && i >= bestBase && i < bestBase + bestLen) {
      if (i === bestBase) s += ":";
      continue;
    }
    if (i !== 0) s += ":";
    // An embedded IPv4: exactly six leading zero groups (::a.b.c.d), or five and ffff (::ffff:a.b.c.d).
    if (i === 6 && bestBase === 0 && (bestLen === 6 || (bestLen === 5 && w[5] === 0xffff))) {
      return s + ipv4(b, p + 12);
    }
    s += w[i]!.toString(16);
  }
  if (bestBase !== -1 && bestBase + bestLen === 8) s += ":";
  return s;
}

function inetText(b: Uint8Array, off: number, len: number, cidr: boolean): string {
  const typeName = cidr ? "cidr" : "inet";
  if (len < 4) throw invalid(typeName, b, off, len);
  const family = b[off]!;
  const bits = b[off + 1]!;
  const nb = b[off + 3]!;
  if (family === FAMILY_INET && nb === 4 && len === 8) {
    const a = ipv4(b, off + 4);
    return bits !== 32 || cidr ? `${a}/${bits}` : a;
  }
  if (family === FAMILY_INET6 && nb === 16 && len === 20) {
    const a = ipv6(b, off + 4);
    return bits !== 128 || cidr ? `${a}/${bits}` : a;
  }
  throw invalid(typeName, b, off, len);
}

export function binaryInet(b: Uint8Array, off: number, len: number): string {
  return inetText(b, off, len, false);
}

export function binaryCidr(b: Uint8Array, off: number, len: number): string {
  return inetText(b, off, len, true);
}

function mac(b: Uint8Array, off: number, len: number, n: number, typeName: string): string {
  if (len !== n) throw invalid(typeName, b, off, len);
  let s = HEX[b[off]!]!;
  for (let i = 1; i < n; i++) s += `:${HEX[b[off + i]!]!}`;
  return s;
}

export function binaryMacaddr(b: Uint8Array, off: number, len: number): string {
  return mac(b, off, len, 6, "macaddr");
}

export function binaryMacaddr8(b: Uint8Array, off: number, len: number): string {
  return mac(b, off, len, 8, "macaddr8");
}
