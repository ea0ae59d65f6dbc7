# @fileoverview nearley grammar of GBNF/EBNF grammar files (llama.cpp GBNF, XGrammar EBNF).
# Tokens come from grammar/lexer.ts (moo): whitespace, line breaks and comments are dropped, and a
# name followed by `::=` arrives as a `rulename` token, so a rule runs until the next rulename.
# The postprocessors keep the raw tokens and never mutate their inputs (an Earley parser may share
# a completed node between several parses); grammar/parse.ts turns them into the spanned AST.
# The lexer object below only answers `has` at grammar-build time; parse.ts installs the real one.
@{% const lexer = { has: () => true }; %}
@lexer lexer

grammar -> rule:*                                {% ([rules]) => rules %}

rule -> %rulename %defn alts                     {% ([name, defn, alts]) => ({ name, defn, alts }) %}

# alts: { seqs: item[][], seps: token[] } where seps[i] is the token before seqs[i+1] ('|').
alts -> seq                                      {% ([s]) => ({ seqs: [s], seps: [] }) %}
      | alts %pipe seq                           {% ([a, p, s]) => ({ seqs: [...a.seqs, s], seps: [...a.seps, p] }) %}

seq -> null                                      {% () => [] %}
     | seq item                                  {% ([s, i]) => [...s, i] %}

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
