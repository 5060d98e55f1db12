// Writes ecma_regex.json: what a JavaScript engine says about each pattern with the u flag, the
// table test_agenttool.py's TestEcmaRegexTable checks the validator's patterns against: each
// row says whether `new RegExp(pattern, "u")` compiles and, if so, which of the strings it finds
// (RegExp.prototype.test, an unanchored search, as JSON Schema's "pattern" is), "1" or "0" each.
// Regenerate with: node testdata/ecma_regex.js > testdata/ecma_regex.json
"use strict";

const POOL = [
  "", "a", "b", "A", "z", "Z", "_", "-", "0", "9", "abc", "ABC", "aBc", "a b", "a\tb", "123",
  "12a", "a1", "\n", "a\n", "\na", "\r", "a\r", "\u2028", "\u2029", "\u0085", "\t", " ", "\x0b",
  "\x0c", "\x1c", "\x1f", "\u00a0", "\ufeff", "\u1680", "\u2000", "\u200b", "\u3000", "\u0660\u0661",
  "\u00e9", "\u00c9", "e\u0301", "\u212a", "\u017f", "\u00df", "\u0130", "\ud83d\ude00",
  "x\ud83d\ude00y", "\ud83d", "\ude00", "\u{10ffff}", "\0", "\x08", "\x07", "\x1b", "foo",
  "foo bar", "bar foo", "foobar", "a.b", "a/b", "a\\b", "a{2}", "{", "}", "[", "]", "$", "^",
  "aa", "aaa", "aaaa", "aaaaaaaaaa!", "abab", "ab\nab", "2024-01-31", "2024-1-31",
  "user@example.com", "user@@example", "x-api-key", "X_Key", "hello world", "hello  world",
  "Passw0rd", "password", "P4ss", "+1 555 0100", "#ff00aa", "#FF00AA", "#ff00a", "1.5", "-1.5e3",
  "v1.2.3", "/path/to/file", "C:\\dir", "\u0391\u03b2", "\u4e2d\u6587", "\u00bd", "\u2160",
];

const PATTERNS = [
  // literals, dot, anchors, the end of input
  "a", "abc", "^a", "a$", "^a$", "^$", "", "^abc$", ".", "^.$", "^..$", "a.c", "^.*$", "^.+$",
  "$", "^", "^$|^a$", "a|b", "^(a|b)$", "^(?:ab|cd)$", "^a*$", "^a+$", "^a?$", "^a{2}$",
  "^a{2,}$", "^a{2,3}$", "^a{0}$", "^a{0,0}b$", "^a*?$", "^a+?b$", "^a??$", "^a{1,2}?$",
  "a{99999999999}", "^(?:a|)$", "^()$", "^(a)?$", "^\\$$", "^\\^$", "^\\.$", "^\\\\$", "^\\/$",
  "/", "^/$", "^a/b$", "a\\/b",
  // escapes
  "^\\t$", "^\\n$", "^\\r$", "^\\v$", "^\\f$", "^\\0$", "\\0", "^\\x41$", "^\\x4$", "\\x4g",
  "^\\u0041$", "^\\u004$", "^\\u{41}$", "^\\u{1F600}$", "^\\u{10FFFF}$", "\\u{110000}", "\\u{}",
  "^\\u{0000000041}$", "^\\uD83D\\uDE00$", "^\\uD83D$", "^\\uDE00$", "\\uD83D\\u0041",
  "^\\u{D83D}\\u{DE00}$", "^\\cA$", "^\\ca$", "^\\cz$", "\\c", "\\c1", "\\c_", "^[\\cJ]$",
  "\\a", "\\e", "\\A", "\\Z", "\\z", "\\G", "\\h", "\\R", "\\X", "\\N", "\\-", "\\_", "\\ ",
  "\\'", "\\\"", "\\<", "\\%", "\\@", "\\i", "\\m", "\\y", "\\q", "\\o", "\\g", "\\j", "\\l",
  "\\1", "\\2(a)", "(a)\\1", "^(a)\\1$", "^(a)\\2$", "\\1(a)", "^\\1(a)$", "^(a\\1)$", "\\8",
  "\\9", "\\00", "\\01", "\\07", "\\k", "\\k<a>", "(?<a>x)\\k<a>", "^(?<a>x)\\k<a>$", "\\k<a>(?<a>x)",
  "(?<a>x)\\k<b>", "(?<a>x)\\k", "^(?<year>\\d{4})-(?<m>\\d\\d)$", "(?<a>.)(?<a>.)",
  "(?<1a>x)", "(?<$x>y)", "(?<_x>y)", "(?<é>y)", "(?<a b>y)", "(?<>y)", "(?<\\u0041>x)",
  "^(?<a\\u0041>x)\\k<aA>$", "(?<a\\u{41}>x)\\k<a\\u0041>", "(?<\\u0031>x)",
  // class escapes
  "^\\d$", "^\\D$", "^\\w$", "^\\W$", "^\\s$", "^\\S$", "^\\d+$", "^\\w+$", "^\\s+$", "\\s",
  "\\S", "\\W", "\\D", "^[\\d]$", "^[\\D]$", "^[\\w-]+$", "^[\\s\\S]$", "^[^\\s]$", "^[\\S\\s]+$",
  "\\bfoo\\b", "\\bfoo", "foo\\b", "\\Bfoo", "foo\\B", "^\\b$", "\\b", "\\B", "^\\B$", "a\\bb",
  "\\b\\w", "[\\b]", "^[\\b]$", "[\\B]", "\\b*", "\\b+", "^*", "$*", "a^", "$a",
  // character classes
  "^[abc]$", "^[^abc]$", "^[a-c]$", "^[a-zA-Z0-9_]+$", "^[-a]$", "^[a-]$", "^[a\\-z]$",
  "^[\\-]$", "[]", "^[]$", "[^]", "^[^]$", "^[^]+$", "[a-]", "[-]", "^[z-a]$", "[\\d-z]",
  "[a-\\d]", "[\\w-\\d]", "^[\\]]$", "^[\\[]$", "[[]", "^[[]$", "^[]]$", "[a", "[\\", "^[.]$",
  "^[$^]$", "^[|]$", "^[\\^]$", "^[\\$]$", "^[\\/]$", "^[\\.]$", "^[\\u0041-\\u0043]+$",
  "^[\\u{1F600}-\\u{1F64F}]$", "^[\\uD83D\\uDE00]$", "^[😀]$", "^[😀-😂]$", "^😀+$", "^.{1}$",
  "^[\\x00-\\x7F]+$", "^[^\\x00-\\x7F]+$", "^[\\0]$", "^[\\01]$", "^[\\1]$", "[\\k]", "[\\c]",
  "^[\\cA]$", "[\\e]", "[\\a]", "^[\\t\\n]+$", "[\\-a]", "^[a-z&&[^b]]$", "[a-z--b]",
  "[\\p{Zl}-z]", "[a-\\p{Zl}]", "^[\\u{61}-\\u{7a}]+$", "^[\\s-]+$", "^[-\\s]+$", "[\\s-a]",
  "^[\\w-.]+$", "^[^-]$", "^[a-a]$", "[\\x41-\\x40]",
  // Unicode properties
  "^\\p{L}+$", "^\\p{Letter}+$", "^\\P{L}+$", "^\\p{Lu}$", "^\\p{Ll}$", "^\\p{Lt}$",
  "^\\p{Nd}+$", "^\\p{digit}+$", "^\\p{N}+$", "^\\p{Nl}$", "^\\p{No}$", "^\\p{P}$",
  "^\\p{punct}$", "^\\p{S}$", "^\\p{Sm}$", "^\\p{Z}$", "^\\p{Zs}$", "^\\p{Zl}$", "^\\p{C}$",
  "^\\p{Cc}$", "^\\p{cntrl}$", "^\\p{Cf}$", "^\\p{M}$", "^\\p{Mn}$", "^\\p{Combining_Mark}$",
  "^\\p{gc=Lu}$", "^\\p{General_Category=Letter}$", "^\\p{General_Category=L}$",
  "^\\p{Uppercase_Letter}$", "^\\p{Lowercase_Letter}$", "^\\p{Decimal_Number}$",
  "^\\p{Space_Separator}$", "^\\p{Cased_Letter}$", "^\\p{LC}$", "^\\p{Any}$", "^\\p{ASCII}+$",
  "^\\P{ASCII}+$", "^\\p{ASCII_Hex_Digit}+$", "^[\\p{L}\\p{Nd}]+$", "^[^\\p{L}]+$",
  "^[\\P{L}]$", "\\p{Greek}", "\\p{Script=Greek}", "\\p{sc=Latin}", "\\p{Script=Foo}",
  "\\p{scx=Greek}", "\\p{Alphabetic}", "\\p{White_Space}", "\\p{Emoji}", "\\p{foo}", "\\p{l}",
  "\\p{letter}", "\\p{gc=Letter}", "\\p{gc=foo}", "\\p{General_Category}", "\\p{=L}", "\\p",
  "\\p{", "\\p{L", "\\pL", "\\P{Any}", "\\p{Lu}\\P{Lu}", "\\p{ Lu}", "\\p{Script_Extensions=Latin}",
  // quantifiers and what ECMA refuses around them
  "a{,2}", "a{,}", "a{2,1}", "a{1}{2}", "a**", "a++", "a?+", "a*+", "a{2}+", "a+*", "*a", "+a",
  "?a", "{2}", "a{", "a{1", "a{1,", "a{x}", "a}", "}", "{", "]", "a]", "x{2}{3}", "(*)", "(+a)",
  "a|*", "^{2}", "a{1,2}{3}", "a{1}?", "^a{1}?$", "(?:a){2}", "^(?:ab){2}$", "^(ab){1,2}$",
  // groups and lookarounds
  "(a", "a)", "()", "(?:)", "(?:a", "(?i)a", "(?i:a)", "(?s).", "(?m)^a", "(?x)a", "(?#c)a",
  "(?P<n>a)", "(?P=n)", "(?>a)", "(?|a)", "(?=a)", "^(?=a)", "^(?=a).$", "^(?!a).$",
  "(?<=a)b", "(?<!a)b", "^.(?<=a)$", "(?<=a+)b", "(?<=\\d{2})x", "(?=a)*", "(?=a)+", "(?!a)?",
  "(?<=a)*", "(?=a){2}", "^(?=.*\\d)(?=.*[a-z]).{6,}$", "^(?=.*[A-Z])(?=.*\\d).{8,}$",
  "^(?!.*password).*$", "^(?!\\s)(?!.*\\s$).+$", "foo(?=bar)", "foo(?!bar)", "(?<=foo)bar",
  "^(?:(?=a)a)+$", "(?=(a))\\1", "^(?<x>a)(?=\\k<x>)", "(?<x>a)|\\k<x>",
  // typical schema patterns
  "^[a-z0-9_-]{3,16}$", "^[a-zA-Z_][a-zA-Z0-9_]*$", "^\\d{4}-\\d{2}-\\d{2}$",
  "^#[0-9a-fA-F]{6}$", "^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$", "^[^@]+@[^@]+\\.[^@]+$",
  "^https?://", "^(\\+\\d{1,3}\\s?)?\\d{3}\\s?\\d{4}$", "^-?\\d+(\\.\\d+)?([eE][+-]?\\d+)?$",
  "^v?\\d+\\.\\d+\\.\\d+$", "^[A-Z]{2,3}$", "^x-", "^[a-z]+(-[a-z]+)*$", "^\\w+(\\.\\w+)*$",
  "^(GET|POST|PUT|PATCH|DELETE)$", "^/([a-z]+/)*[a-z]*$", "^[A-Za-z]:\\\\", "^\\S+$",
  "^\\s*$", "^\\s*\\S.*$", "\\S", "^[\\w.+-]+$", "^(?:[01]\\d|2[0-3]):[0-5]\\d$",
  // catastrophic on a backtracking engine, harmless on a linear one
  "^(a+)+$", "^(a*)*$", "^(a|a)*$", "^(a|aa)+$", "^(\\w+\\s?)*$", "^(\\d+)*x$", "(a+)+b",
  "^(.*a){3}$", "^(a|b|ab)*c$", "a.*b.*c", "^(\\w+\\.)*\\w+$", "^([a-z]+\\s*)+$", "(x+x+)+y",
  "^(\\s*\\w+\\s*,?)*$", "^(([a-z])+.)+[A-Z]([a-z])+$", "[a-z]+$", "\\d+x", "(.*)*x",
  "^(?:a|a?)+$", "(?:a*)*b", "(?:a?){20}a{20}", "^(?:ab|a)*c$", "^(a|ab)(c|bcd)(d*)$",
];

function verdicts(pattern) {
  let re;
  try {
    re = new RegExp(pattern, "u");
  } catch (err) {
    return { pattern, valid: false };
  }
  return { pattern, valid: true, matches: POOL.map((s) => (re.test(s) ? "1" : "0")).join("") };
}

const rows = PATTERNS.map(verdicts);
process.stdout.write(
  '{\n  "engine": ' + JSON.stringify("node " + process.version) + ",\n" +
  '  "strings": ' + JSON.stringify(POOL) + ',\n  "rows": [\n' +
  rows.map((row) => "    " + JSON.stringify(row)).join(",\n") + "\n  ]\n}\n"
);
