# @fileoverview nearley grammar of AgentSpec rule files, seed 003 Fig. 3:
#   Program ::= Rule+
#   Rule    ::= rule Id trigger Toolkit.Tool check Pred* enforce Enforce+ end
#   Pred    ::= True | False | ¬Pred | CustomizedPred
#   Enforce ::= user_inspection | llm_self_reflect | invoke_action(Id, {KV Pairs}) | stop
# Tokens come from rules/lexer.ts (moo; keywords already have their own token type). The grammar is
# deliberately generic where the paper lists names: an enforcement is any name with an optional
# argument list of JSON-like values, a trigger is any (dotted) name, a predicate any name. Lowering
# (rules/lower.ts) then checks them, which gives better diagnostics ("unknown enforcement
# user_inspect: did you mean user_inspection?") than a parse error could. Fig. 1 writes
# `user_inspection(add_contact, ...)`, and `llm_self_reflect(3)` carries a bound, so every
# enforcement may take arguments here.
# The lexer object below only answers `has` at grammar-build time; parse.ts installs the real one.
# Lists are built as immutable cons cells ({ item, prev }), turned into arrays by parse.ts after the
# parse: nearley calls a postprocessor at every completion, so copying an array there (what `:*`
# does) costs O(n²) on long lists, and mutating one would corrupt derivations that share it.
@{% const lexer = { has: () => true }; const cons = (prev, item) => ({ prev, item }); %}
@lexer lexer

file -> rules                                    {% id %}
rules -> rule                                    {% ([r]) => cons(null, r) %}
       | rules rule                              {% ([l, r]) => cons(l, r) %}

rule -> %rule %ruleid %trigger %name %check preds %enforce enfs %end
  {% (d) => ({ kind: "rule", kw: d[0], id: d[1], target: d[3], preds: d[5], enfs: d[7], end: d[8] }) %}

preds -> null                                    {% () => null %}
       | preds pred                              {% ([l, p]) => cons(l, p) %}
pred -> %name                                    {% ([t]) => ({ kind: "name", tok: t }) %}
      | %not pred                                {% ([t, p]) => ({ kind: "not", tok: t, pred: p }) %}
      | %bang pred                               {% ([t, p]) => ({ kind: "not", tok: t, pred: p }) %}

enfs -> enf                                      {% ([e]) => cons(null, e) %}
      | enfs enf                                 {% ([l, e]) => cons(l, e) %}
enf -> %name                                     {% ([t]) => ({ name: t, args: undefined, close: t }) %}
     | %name %lparen values %rparen              {% ([t, , args, close]) => ({ name: t, args, close }) %}

values -> null                                   {% () => null %}
        | valueList                              {% id %}
        | valueList %comma                       {% id %}
valueList -> value                               {% ([v]) => cons(null, v) %}
           | valueList %comma value              {% ([l, , v]) => cons(l, v) %}

value -> %string                                 {% ([t]) => ({ kind: "string", tok: t }) %}
       | %number                                 {% ([t]) => ({ kind: "number", tok: t }) %}
       | %name                                   {% ([t]) => ({ kind: "name", tok: t }) %}
       | %lbracket values %rbracket              {% ([o, items, c]) => ({ kind: "array", tok: o, items, close: c }) %}
       | %lbrace pairs %rbrace                   {% ([o, pairs, c]) => ({ kind: "object", tok: o, pairs, close: c }) %}

pairs -> null                                    {% () => null %}
       | pairList                                {% id %}
       | pairList %comma                         {% id %}
pairList -> pair                                 {% ([p]) => cons(null, p) %}
          | pairList %comma pair                 {% ([l, , p]) => cons(l, p) %}
pair -> key %colon value                         {% ([k, , v]) => ({ key: k, value: v }) %}
key -> %string                                   {% id %}
     | %name                                     {% id %}
