#!/usr/bin/env python3
"""Writes the expected renders of the chat templates in tests/data/chat_templates/ with Python's jinja2.

The environment is the one Hugging Face transformers renders chat templates with (and llama.cpp
mirrors): trim_blocks + lstrip_blocks, the loopcontrols extension, raise_exception() and strftime_now()
globals, and transformers' tojson override (json.dumps with ensure_ascii=False, keys not sorted).
strftime_now() formats the fixed time NOW (UTC) so the fixtures do not change with the date.

Output: tests/data/chat_templates/expected/<template>.json (one per .jinja file, every message case)
and tests/data/chat_templates/expected/features.json (small templates exercising single features).
Each case is {"name", "context", "expected"} or {"name", "context", "error"} when jinja2 raised.
Run from the repository root:  python3 tests/reference/make_chat_fixtures.py
"""
import copy
import datetime
import json
import pathlib
import sys

import jinja2
import jinja2.ext

ROOT = pathlib.Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "tests" / "data" / "chat_templates"
OUT = TEMPLATES / "expected"
NOW = 1741953600  # 2025-03-14 12:00:00 UTC


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.datetime.fromtimestamp(NOW, datetime.timezone.utc).strftime(fmt)

    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(env, source, context):
    try:
        return {"expected": env.from_string(source).render(**copy.deepcopy(context))}
    except Exception as e:  # noqa: BLE001 - any jinja2 failure is an expected error case
        return {"error": f"{type(e).__name__}: {e}"}


TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. \"Paris\""},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 7.5},
            },
            "required": ["city"],
        },
    },
}]

TOOL_CALL = {"id": "call00001", "type": "function",
             "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}
TOOL_CALL_STR = {"id": "call00002", "type": "function",
                 "function": {"name": "get_weather", "arguments": "{\"city\": \"Tokyo\"}"}}


def message_cases():
    sys_msg = {"role": "system", "content": "You are a terse assistant."}
    u1 = {"role": "user", "content": "Hello! What's 2+2?"}
    a1 = {"role": "assistant", "content": "4."}
    u2 = {"role": "user", "content": "And times 3?\nAnswer \"briefly\"."}
    think = {"role": "assistant", "content": "<think>\n2+2=4, 4*3=12\n</think>\n\n12."}
    return [
        ("single_user", [u1], None, True, {}),
        ("single_user_no_prompt", [u1], None, False, {}),
        ("system_multi_turn", [sys_msg, u1, a1, u2], None, True, {}),
        ("multi_turn_ends_assistant", [u1, a1, u2, {"role": "assistant", "content": "12"}], None, False, {}),
        ("unicode_and_spaces", [{"role": "user", "content": "  Grüße, 世界! 🐝  "}], None, True, {}),
        ("thinking_history", [u1, think, u2], None, True, {}),
        ("enable_thinking_false", [u1], None, True, {"enable_thinking": False}),
        ("enable_thinking_true", [sys_msg, u1], None, True, {"enable_thinking": True}),
        ("tools_system", [sys_msg, {"role": "user", "content": "Weather in Paris?"}], TOOLS, True, {}),
        ("tools_call_and_result", [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]},
            {"role": "tool", "tool_call_id": "call00001", "content": "{\"temperature\": 21}"},
        ], TOOLS, True, {}),
        ("tools_string_arguments", [
            {"role": "user", "content": "Weather in Tokyo?"},
            {"role": "assistant", "content": "", "tool_calls": [TOOL_CALL_STR]},
            {"role": "tool", "tool_call_id": "call00002", "content": "sunny"},
            {"role": "assistant", "content": "It is sunny."},
            {"role": "user", "content": "Thanks"},
        ], TOOLS, True, {}),
        ("content_parts", [{"role": "user", "content": [{"type": "text", "text": "Describe "},
                                                        {"type": "text", "text": "this."}]}], None, True, {}),
        ("empty_messages", [], None, True, {}),
    ]


def dump(doc):
    """One line per case, so a fixture diff shows which case changed (and files stay short)."""
    head = {k: v for k, v in doc.items() if k != "cases"}
    lines = [json.dumps(c, ensure_ascii=False) for c in doc["cases"]]
    text = json.dumps(head, ensure_ascii=False)[:-1] + ', "cases": [\n' + ",\n".join(lines) + "\n]}\n"
    assert json.loads(text) == doc
    return text


def template_fixtures(env):
    OUT.mkdir(exist_ok=True)
    for path in sorted(TEMPLATES.glob("*.jinja")):
        source = path.read_text()
        cases = []
        for name, messages, tools, add_gen, kwargs in message_cases():
            context = {"messages": messages, "add_generation_prompt": add_gen,
                       "bos_token": "<s>", "eos_token": "</s>", "date_string": "14 Mar 2025"}
            if tools is not None:
                context["tools"] = tools
            context.update(kwargs)
            cases.append({"name": name, "context": context, **render(env, source, context)})
        doc = {"template": path.name, "now": NOW, "cases": cases}
        (OUT / (path.stem + ".json")).write_text(dump(doc))


# Small templates, one feature each (plus the whitespace rules), rendered with CONTEXT.
CONTEXT = {"name": "Bee", "items": [3, 1, 2], "msgs": [{"role": "user", "content": " hi "},
                                                       {"role": "assistant", "content": "yo"},
                                                       {"role": "user", "content": "bye"}],
           "d": {"b": 1, "a": [1.5, None, True], "c": "x\"y"}, "n": 7, "f": 0.1, "s": "a,b,,c", "empty": ""}

FEATURES = [
    ("text_only", "plain text\n"),
    ("output", "{{ name }} {{ n }} {{ f }} {{ items }} {{ d }} {{ none }} {{ true }} {{ missing }}"),
    ("arith", "{{ n + 1 }} {{ n - 10 }} {{ n * 2 }} {{ n / 2 }} {{ n // 2 }} {{ -7 // 2 }} {{ n % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 1.5 * 2 }} {{ 1e-5 }} {{ 1e20 }} {{ 3.0 }}"),
    ("concat", "{{ name ~ n ~ missing ~ none }} {{ 'a' + 'b' }} {{ [1] + [2] }} {{ 'ab' * 3 }}"),
    ("compare", "{{ 1 < 2 }} {{ 'a' >= 'b' }} {{ n == 7.0 }} {{ true == 1 }} {{ [1,2] == [1,2] }} {{ d == d }} {{ 1 != 1 }}"),
    ("logic", "{{ 0 or 'x' }} {{ 1 and 'y' }} {{ not empty }} {{ missing or 'dflt' }} {{ 'a' if n > 5 else 'b' }} {{ 'c' if false }}|"),
    ("in", "{{ 'b' in s }} {{ 2 in items }} {{ 'a' in d }} {{ 'z' not in d }} {{ 'x' in missing }}"),
    ("subscript", "{{ items[0] }} {{ items[-1] }} {{ d['a'][0] }} {{ d.c }} {{ msgs[1].role }} {{ name[1] }} {{ items[10] }}|"),
    ("slices", "{{ items[1:] }} {{ items[:-1] }} {{ items[::-1] }} {{ name[::-1] }} {{ items[5:] }} {{ 'héllo'[1:3] }} {{ items[::2] }}"),
    ("for_loop_vars", "{% for x in items %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }}{{ loop.cycle('o','e') }};{% endfor %}"),
    ("for_else_filter", "{% for x in items if x > 1 %}{{ x }}/{{ loop.length }} {% else %}none{% endfor %}{% for x in [] %}a{% else %}empty{% endfor %}"),
    ("for_dict_items", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}{% for k, v in d | items %}{{ k }}{% endfor %}"),
    ("break_continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x > 4 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
    ("scoping", "{% set x = 1 %}{% for i in items %}{% set x = i %}{% endfor %}{{ x }}{% if true %}{% set y = 2 %}{% endif %}{{ y }}"),
    ("namespace", "{% set ns = namespace(count=0, last=none) %}{% for m in msgs %}{% set ns.count = ns.count + 1 %}{% set ns.last = m.role %}{% endfor %}{{ ns.count }} {{ ns.last }}"),
    ("macro", "{% macro greet(who, punct='!') %}Hi {{ who }}{{ punct }}{% endmacro %}{{ greet('a') }} {{ greet('b', '?') }} {{ greet(who='c', punct='.') }}"),
    ("set_block", "{% set block %}[{{ name }}]{% endset %}{{ block }}{{ block | length }}"),
    ("whitespace_trim_lstrip", "<a>\n  {% if true %}\n    yes\n  {% endif %}\n  {# comment #}\n</a>\n"),
    ("whitespace_dash", "a   {{- name -}}   b\n  {%- if true -%}\n  c  \n{%- endif %}\nd {%+ if true %}e{% endif %}"),
    ("whitespace_var_no_trim", "{{ name }}\n{{ n }}\n  {{ f }}\n"),
    ("filters_string", "{{ '  x  ' | trim }}|{{ name | upper }}{{ name | lower }}{{ 'hello world' | title }}{{ 'hELLO' | capitalize }}{{ s | replace(',', ';') }}{{ name | length }}{{ 'héllo' | length }}"),
    ("filters_list", "{{ items | join('-') }} {{ items | first }} {{ items | last }} {{ items | length }} {{ items | sort }} {{ items | sort(reverse=true) }} {{ items | reverse | list }} {{ items | sum }} {{ items | min }} {{ items | max }} {{ [1,1,2] | unique | list }}"),
    ("filters_default", "{{ missing | default('d') }} {{ empty | default('e') }} {{ empty | default('e', true) }} {{ none | default('n') }} {{ missing | d('x') }}"),
    ("filters_convert", "{{ '42' | int + 1 }} {{ 'x' | int }} {{ 3.9 | int }} {{ '2.5' | float }} {{ 5 | string }}{{ items | string }} {{ n | float }} {{ -3 | abs }}"),
    ("filters_tojson", "{{ d | tojson }}\n{{ d | tojson(indent=2) }}\n{{ 'é\"\\n' | tojson }} {{ [] | tojson }} {{ {} | tojson }} {{ msgs[0] | tojson(indent=4) }}"),
    ("filters_select", "{{ msgs | selectattr('role', 'equalto', 'user') | map(attribute='content') | list }} {{ msgs | rejectattr('role', 'equalto', 'user') | list | length }} {{ items | select('odd') | list }} {{ items | reject('equalto', 2) | list }} {{ msgs | map(attribute='role') | join(',') }} {{ ['a','b'] | map('upper') | list }}"),
    ("filters_misc", "{{ 'a\nb' | indent(2) }} {{ 'a\nb' | indent(2, true) }} {{ 'one two  three' | wordcount }} {{ d | dictsort }} {{ '<&>' | e }} {{ name | safe }}"),
    ("tests", "{{ name is string }} {{ n is number }} {{ n is integer }} {{ f is float }} {{ d is mapping }} {{ items is iterable }} {{ missing is defined }} {{ missing is undefined }} {{ none is none }} {{ n is odd }} {{ n is even }} {{ n is divisibleby 7 }} {{ true is true }} {{ 0 is false }} {{ n is not none }} {{ 2 is in items }} {{ n is equalto 7 }} {{ 'abc' is lower }} {{ name is sameas name }}"),
    ("string_methods", "{{ '  a b  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '  a'.lstrip() }}|{{ 'a  '.rstrip() }}|{{ s.split(',') }}|{{ ' a  b '.split() }}|{{ s.split(',', 1) }}|{{ name.startswith('B') }}{{ name.endswith('e') }}{{ name.startswith(('x','B')) }}|{{ s.replace(',', '') }}|{{ name.upper() }}{{ name.lower() }}{{ 'ab cd'.title() }}|{{ s.find('b') }}{{ s.count(',') }}|{{ '-'.join(['a','b']) }}"),
    ("dict_methods", "{{ d.get('b') }} {{ d.get('zz') }} {{ d.get('zz', 5) }} {{ d.keys() | list }} {{ d.values() | list }} {{ d.items() | list }}"),
    ("list_literals", "{{ [1, 'a', [2]] }} {{ {'k': 'v', 'n': 1} }} {{ (1, 2) }} {{ ('a',) }} {{ range(3) | list }} {{ range(1, 10, 3) | list }} {{ range(5, 0, -2) | list }}"),
    ("string_escapes", "{{ 'a\\tb' }}|{{ \"q'q\" }}|{{ 'q\"q' }}|{{ ['it\\'s', \"x\\\"\", 'a\\nb'] }}|{{ 'adj' 'acent' }}"),
    ("raise", "{% if n > 5 %}{{ raise_exception('n too big: ' ~ n) }}{% endif %}"),
    ("strftime", "{{ strftime_now('%Y-%m-%d %H:%M') }} {{ strftime_now('%d %b %Y') }}"),
    ("undefined_attr_error", "{{ missing.attr }}"),
    ("nested_loops", "{% for m in msgs %}{% for c in m.role %}{{ loop.index }}{% endfor %}:{{ loop.index }} {% endfor %}"),
    ("filter_block", "{% filter upper %}hello {{ name }}{% endfilter %}"),
    ("call_block", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold {{ name }}{% endcall %}"),
    ("unpack_set", "{% set a, b = [1, 2] %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }}"),
    ("cond_chain", "{% for x in items %}{% if x == 1 %}one{% elif x == 2 %}two{% else %}other{% endif %} {% endfor %}"),
    ("tojson_kwargs", "{{ d | tojson(separators=(',', ':')) }} {{ d | tojson(sort_keys=true) }} {{ 'é🐝\\u0001' | tojson(ensure_ascii=true) }} {{ msgs[:1] | tojson(indent=1, separators=(',', ': ')) }}"),
    ("markup_safe", "{{ '<b>'|safe + '<i>' }} {{ '<x>' | e }} {{ '<x>'|safe|e }} {{ '<a>' ~ ('<b>'|safe) }} {{ '\"q\"' + '<' }}"),
    ("select_on_none", "{{ none | selectattr('a') | list }} {{ none | map(attribute='a') | list }} {{ '' | reject('none') | list }}"),
    ("precedence", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ -2 ** 2 }} {{ not 1 == 2 }} {{ 1 ~ 2 * 3 }} {{ items | length > 2 and n is odd }} {{ -n | abs }}"),
]


def feature_fixtures(env):
    cases = [{"name": name, "source": source, "context": CONTEXT, **render(env, source, CONTEXT)}
             for name, source in FEATURES]
    doc = {"now": NOW, "cases": cases}
    (OUT / "features.json").write_text(dump(doc))


def main():
    env = make_env()
    template_fixtures(env)
    feature_fixtures(env)
    print(f"wrote fixtures to {OUT} (jinja2 {jinja2.__version__})", file=sys.stderr)


if __name__ == "__main__":
    main()
