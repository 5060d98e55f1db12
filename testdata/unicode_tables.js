// Writes the Unicode data agenttool.py's ECMA-262 patterns carry (\p{..}), so that a pattern
// means the same on every Python whatever its unicodedata: the code points of each
// General_Category value (but Cn, the rest) and of each binary property ECMA-262 lists, as
// ranges, read from this JavaScript engine's own \p{..} (node's ICU), for ONE Unicode version.
//
// Format: for each property, its name, a NUL, then varints (7 bits a byte, high bit = more):
// the number of ranges, then per range the gap since the previous range's end and the length
// less one.  The whole is deflated (zlib format) and base64-encoded, printed as the Python
// assignment agenttool.py holds between its "unicode tables" markers.
// Regenerate with: node testdata/unicode_tables.js  (and paste over the block in agenttool.py);
// test_types.TestPinnedUnicode checks that the block is what this prints, when node's Unicode
// version is the pinned one.
"use strict";
const zlib = require("zlib");

const CATEGORIES = (
  "Cc Cf Co Cs Ll Lm Lo Lt Lu Mc Me Mn Nd Nl No Pc Pd Pe Pf Pi Po Ps Sc Sk Sm So Zl Zp Zs"
).split(" ");
const BINARY = (
  "Alphabetic Bidi_Control Bidi_Mirrored Case_Ignorable Cased Changes_When_Casefolded " +
  "Changes_When_Casemapped Changes_When_Lowercased Changes_When_NFKC_Casefolded " +
  "Changes_When_Titlecased Changes_When_Uppercased Dash Default_Ignorable_Code_Point " +
  "Deprecated Diacritic Emoji Emoji_Component Emoji_Modifier Emoji_Modifier_Base " +
  "Emoji_Presentation Extended_Pictographic Extender Grapheme_Base Grapheme_Extend Hex_Digit " +
  "IDS_Binary_Operator IDS_Trinary_Operator ID_Continue ID_Start Ideographic Join_Control " +
  "Logical_Order_Exception Lowercase Math Noncharacter_Code_Point Pattern_Syntax " +
  "Pattern_White_Space Quotation_Mark Radical Regional_Indicator Sentence_Terminal " +
  "Soft_Dotted Terminal_Punctuation Unified_Ideograph Uppercase Variation_Selector " +
  "XID_Continue XID_Start"
).split(" ");

function ranges(re) {
  const out = [];
  let start = -1;
  for (let cp = 0; cp <= 0x110000; cp++) {
    const inside = cp < 0x110000 && re.test(String.fromCodePoint(cp));
    if (inside && start < 0) start = cp;
    if (!inside && start >= 0) {
      out.push([start, cp - 1]);
      start = -1;
    }
  }
  return out;
}

function varint(bytes, n) {
  while (n >= 0x80) {
    bytes.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  bytes.push(n);
}

const bytes = [];
for (const [name, source] of [
  ...CATEGORIES.map((c) => [c, `^\\p{gc=${c}}$`]),
  ...BINARY.map((b) => [b, `^\\p{${b}}$`]),
]) {
  const rs = ranges(new RegExp(source, "u"));
  for (const ch of name) bytes.push(ch.charCodeAt(0));
  bytes.push(0);
  varint(bytes, rs.length);
  let prev = -1;
  for (const [lo, hi] of rs) {
    varint(bytes, lo - prev - 1);
    varint(bytes, hi - lo);
    prev = hi;
  }
}
const text = zlib.deflateSync(Buffer.from(bytes), { level: 9 }).toString("base64");
const lines = [];
lines.push(`_UNICODE_VERSION = "${process.versions.unicode}"`);
lines.push(`_UNICODE_TABLES = (  # ${text.length} characters, from node ${process.version}, ICU ${process.versions.icu}`);
for (let i = 0; i < text.length; i += 88) lines.push(`    "${text.slice(i, i + 88)}"`);
lines.push(")");
console.log(lines.join("\n"));
