# @fileoverview nearley grammar of GBNF/EBNF grammar files (llama.cpp GBNF, XGrammar EBNF).
# Tokens come from grammar/lexer.ts (moo): whitespace, line breaks and comments are dropped, and a
# name followed by `::=` arrives as a `rulename` token, so a rule runs until the next rulename.
# The postprocessors keep the raw tokens and never mutate their inputs (an Earley parser may share
# a completed node between several parses); grammar/parse.ts turns them into the spanned AST.
# Lists (rules, alternatives, items) are built as cons cells, newest first, { item, prev }: O(1) a
# step and shareable; copying an array a step would be quadratic (10,000 alternatives: 50 million
# copies). parse.ts `flatten` turns them into arrays once, on the final parse.
# The lexer object below only answers `has` at grammar-build time; parse.ts installs the real one.
@{% const lexer = { has: () => true }; %}
@lexer lexer

grammar -> rules                                 {% ([rules]) => rules %}
rules -> null                                    {% () => null %}
       | rules rule                              {% ([prev, item]) => ({ item, prev }) %}

rule -> %rulename %defn alts                     {% ([name, defn, alts]) => ({ name, defn, alts }) %}

# alts: a cons list of { seq, sep } where sep is the '|' before seq (null for the first).
alts -> seq                                      {% ([s]) => ({ item: { seq: s, sep: null }, prev: null }) %}
      | alts %pipe seq                           {% ([a, p, s]) => ({ item: { seq: s, sep: p }, prev: a }) %}

seq -> null                                      {% () => null %}
     | seq item                                  {% ([prev, item]) => ({ item, prev }) %}

item -> atom                                     {% ([a]) => a %}
      | item quant                               {% ([body, q]) => ({ kind: "quant", body, q }) %}

atom -> %string                                  {% ([t]) => ({ kind: "string", t }) %}
      | %charclass                                  {% ([t]) => ({ kind: "class", t }) %}
      | %dot                                     {% ([t]) => ({ kind: "dot", t }) %}
      | %name                                    {% ([t]) => ({ kind: "name", t }) %}
      | %lparen alts %rparen                     {% ([open, alts, close]) => ({ kind: "group", open, alts, close }) %}

quant -> %star                                   {% ([t]) => ({ op: "*", open: t, close: t, min: null, max: null, comma: false }) %}
       | %plus                                   {% ([t]) => ({ op: "+", open: t, close: t, min: null, max: null, comma: false }) %}
       | %question                               {% ([t]) => ({ op: "?", open: t, close: t, min: null, max: null, comma: false }) %}
       | %lbrace %int %rbrace                    {% ([o, m, c]) => ({ op: "{}", open: o, close: c, min: m, max: null, comma: false }) %}
       | %lbrace %int %comma %rbrace             {% ([o, m, , c]) => ({ op: "{}", open: o, close: c, min: m, max: null, comma: true }) %}
       | %lbrace %int %comma %int %rbrace        {% ([o, m, , n, c]) => ({ op: "{}", open: o, close: c, min: m, max: n, comma: true }) %}
