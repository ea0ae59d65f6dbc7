# @fileoverview nearley grammar of the s-expression layer shared by agent specs (and, later, rules).
# Tokens come from frontend/lexer.ts (moo); whitespace and comments are dropped before parsing, and
# parentheses are balance-checked first so that the common mistake gets a precise diagnostic.
# The lexer object below only answers `has` at grammar-build time; parse.ts installs the real one.
@{% const lexer = { has: () => true }; %}
@lexer lexer

file -> expr:*                                   {% ([items]) => items %}

expr -> %lparen expr:* %rparen                   {% ([open, items, close]) => ({ kind: "list", items, open, close }) %}
      | %string                                  {% ([t]) => ({ kind: "atom", type: "string", token: t }) %}
      | %keyword                                 {% ([t]) => ({ kind: "atom", type: "keyword", token: t }) %}
      | %symbol                                  {% ([t]) => ({ kind: "atom", type: "symbol", token: t }) %}
