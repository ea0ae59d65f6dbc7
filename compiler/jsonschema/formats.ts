/**
 * @fileoverview `format` as grammar: the strings (between the quotes) each supported format
 * accepts, each a subset of what ajv-formats accepts ("never looser"): upper-case `T` and `Z`,
 * no `urn:uuid:` prefix, real calendar dates (Feb 29 only in leap years), at most three labels in a
 * hostname (so the 253-character limit always holds), no IP-literal host in a URI, no empty
 * path after a URI's scheme. null: not supported.
 */
const LABEL = "[a-zA-Z0-9] ( [a-zA-Z0-9-]{0,61} [a-zA-Z0-9] )?";
const HEX = "[0-9a-fA-F]";
// Years divisible by 4 (00 only when the century is divisible by 4: 1600, 2000, 2400 …).
const LEAP_YEAR = '( [0-9] [0-9] ( [02468] [48] | [13579] [26] | [2468] "0" ) | ( [02468] [048] | [13579] [26] ) "00" )';
const DATE =
  '( [0-9]{4} "-" ( ( "01" | "03" | "05" | "07" | "08" | "10" | "12" ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] )' +
  ' | ( "04" | "06" | "09" | "11" ) "-" ( "0" [1-9] | [12] [0-9] | "30" )' +
  ' | "02" "-" ( "0" [1-9] | "1" [0-9] | "2" [0-8] ) )' +
  ` | ${LEAP_YEAR} "-02-29" )`;
const TIME = `( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]+ )? ( "Z" | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] )`;
const PCT = `"%" ${HEX} ${HEX}`;
/** A path character of RFC 3986 (unreserved, sub-delims, ':' and '@') or a %-escape. */
const PCHAR = `( [a-zA-Z0-9._~!$&'()*+,;=:@-] | ${PCT} )`;
const OCTET = '( "25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9]? [0-9] )';

/** A URI's "//" authority (a reg-name or IPv4 host) and its path (RFC 3986 `path-abempty`). */
const AUTHORITY = `"//" ( ( [a-zA-Z0-9._~!$&'()*+,;=:-] | ${PCT} )* "@" )?` +
  ` ( [a-zA-Z0-9._~!$&'()*+,;=-] | ${PCT} )* ( ":" [0-9]* )? ( "/" ${PCHAR}* )*`;
/** An absolute path (RFC 3986 `path-absolute`). */
const ABSOLUTE = `"/" ( ${PCHAR}+ ( "/" ${PCHAR}* )* )?`;
/** [?query] [#fragment]. */
const QUERY_FRAGMENT = ` ( "?" ( ${PCHAR} | [/?] )* )? ( "#" ( ${PCHAR} | [/?] )* )?`;
/** A path character but ':' (the first segment of a relative path: `a:b` would read as a scheme). */
const NC_CHAR = `( [a-zA-Z0-9._~!$&'()*+,;=@-] | ${PCT} )`;
// RFC 3986 (what ajv-formats' full `uri` checks): scheme ":" then an authority ("//" [userinfo
// "@"] host [":" port], the host a reg-name or an IPv4 address) and a path, an absolute path, or
// a rootless one; then [?query] [#fragment]. Not taken: an IP-literal host ("[::1]").
const URI = `[a-zA-Z] [a-zA-Z0-9+.-]* ":" ( ${AUTHORITY} | ${ABSOLUTE} | ${PCHAR}+ ( "/" ${PCHAR}* )* )${QUERY_FRAGMENT}`;

const FORMATS: Record<string, string> = {
  date: DATE,
  time: TIME,
  "date-time": `${DATE} "T" ${TIME}`,
  uuid: `${HEX}{8} "-" ${HEX}{4} "-" ${HEX}{4} "-" ${HEX}{4} "-" ${HEX}{12}`,
  ipv4: `${OCTET} "." ${OCTET} "." ${OCTET} "." ${OCTET}`,
  ipv6: `${HEX}{1,4} ( ":" ${HEX}{1,4} ){7}`,
  email: `[a-zA-Z0-9_+-]+ ( "." [a-zA-Z0-9_+-]+ )* "@" ${LABEL} ( "." ${LABEL} ){1,2}`,
  hostname: `${LABEL} ( "." ${LABEL} ){0,2}`,
  uri: URI,
  // A URI or a relative reference (RFC 3986 `URI-reference`, what ajv-formats' `uri-reference`
  // checks): an authority and its path, an absolute path, a relative path whose first segment has
  // no ':', or nothing; then [?query] [#fragment]. The empty string is one. One group: the caller
  // writes the quotes around it.
  "uri-reference": `( ( ${URI} ) | ( ${AUTHORITY} | ${ABSOLUTE} | ${NC_CHAR}+ ( "/" ${PCHAR}* )* )?${QUERY_FRAGMENT} )`,
};

export function formatGrammar(name: string): string | null {
  return FORMATS[name] ?? null;
}

/**
 * The fewest and the most characters of the strings each format above accepts (null: no most),
 * all ASCII, so a length bound these imply is no constraint (minLength 1 beside format uri). The
 * grammars' shortest and longest sentences check them (tests/compiler/jsonschema.test.ts).
 */
export const FORMAT_LENGTHS: Readonly<Record<string, readonly [number, number | null]>> = {
  date: [10, 10],
  time: [9, null],
  "date-time": [20, null],
  uuid: [36, 36],
  ipv4: [7, 15],
  ipv6: [15, 39],
  email: [5, null],
  hostname: [1, 191],
  uri: [3, null],
  "uri-reference": [0, null],
};

/** Whether every string of `name` (a supported format) has min..max characters (max null: no bound). */
export function formatImpliesLength(name: string, min: number, max: number | null): boolean {
  const l = FORMAT_LENGTHS[name];
  return l !== undefined && min <= l[0] && (max === null || (l[1] !== null && l[1] <= max));
}

