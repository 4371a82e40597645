# tests/py/test_chat_cli: `bee chat` driven through stdin (greedy SmolLM2): turns remember earlier ones,
# the KV cache reused between turns gives exactly what a fresh prefill of the whole conversation gives,
# /reset and /exit work, and bad templates are refused with a clear error.
import pathlib

import jinja2

ROOT = pathlib.Path(__file__).resolve().parents[2]
SMOL_TEMPLATE = ROOT / "tests" / "data" / "chat_templates" / "HuggingFaceTB-SmolLM2-135M-Instruct.jinja"
GREEDY = ["--temp", "0", "-n", "40", "-c", "1024"]


def chat(bee, model, lines, *extra):
    r = bee("chat", "-m", model, *GREEDY, *extra, input="".join(l + "\n" for l in lines))
    assert r.returncode == 0, r.stderr
    return r


def test_second_turn_remembers_the_first(bee, smollm):
    r = chat(bee, smollm, ["Hi, I am Bob.", "What is my name?"])
    replies = r.stdout.splitlines()
    assert len(replies) == 2, r.stdout
    assert "Bob" in replies[1], replies
    # Only the new turn is decoded: the first turn's prompt and reply come from the cache.
    assert "reused from the cache" in r.stderr
    reused = [int(l.split("(")[1].split()[0]) for l in r.stderr.splitlines() if "reused from the cache" in l]
    assert reused[0] == 0 and reused[1] > 20, r.stderr


def test_reset_forgets(bee, smollm):
    r = chat(bee, smollm, ["Hi, I am Bob.", "/reset", "What is my name?"])
    replies = r.stdout.splitlines()
    assert len(replies) == 2, r.stdout
    assert "Bob" not in replies[1], replies


def test_cached_turn_equals_fresh_prefill(bee, smollm):
    first, second = "Let's talk about cats.", "Name one thing they like."
    r = chat(bee, smollm, [first, second])
    replies = r.stdout.splitlines()
    assert len(replies) == 2, r.stdout
    # The same conversation rendered by jinja2 and run from scratch by `bee run` must continue identically.
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    prompt = env.from_string(SMOL_TEMPLATE.read_text()).render(
        messages=[{"role": "user", "content": first}, {"role": "assistant", "content": replies[0]},
                  {"role": "user", "content": second}], add_generation_prompt=True)
    fresh = bee("run", "-m", smollm, *GREEDY, "--no-display-prompt", "-p", prompt)
    assert fresh.returncode == 0, fresh.stderr
    assert fresh.stdout.strip() == replies[1].strip()


def test_exit_and_eof_end_the_chat(bee, smollm):
    r = chat(bee, smollm, ["Hello", "/exit", "This line is never answered"])
    assert len(r.stdout.splitlines()) == 1, r.stdout
    r = chat(bee, smollm, [])
    assert r.stdout == ""


def test_builtin_template_for_a_model_without_one(bee, gemma):
    r = bee("chat", "-m", gemma, *GREEDY, input="Hello\n")
    assert r.returncode == 1 and "no chat template" in r.stderr and "--chat-template" in r.stderr
    r = chat(bee, gemma, ["Say hello."], "--chat-template", "gemma")
    assert r.stdout.strip() != ""


def test_llama_cpp_template_names(bee, smollm):
    # Any of llama.cpp's built-in names is a template; an unknown one is refused with the list.
    r = chat(bee, smollm, ["Hi"], "--chat-template", "chatml")
    assert r.stdout.strip() != ""
    r = bee("chat", "-m", smollm, *GREEDY, "--chat-template", "llama-3", input="hi\n")
    assert r.returncode != 0 and "'llama-3'" in r.stderr
    assert all(name in r.stderr for name in ("llama3", "mistral-v7-tekken", "deepseek3", "command-r", "phi4"))


def test_bad_template_file_is_a_clear_error(bee, smollm, tmp_path):
    bad = tmp_path / "bad.jinja"
    bad.write_text("{% for m in messages %}\n{{ m.content }\n{% endfor %}")
    r = bee("chat", "-m", smollm, "--chat-template-file", bad, input="hi\n")
    assert r.returncode == 1
    assert "chat template: 2:" in r.stderr, r.stderr
    # A template that fails while rendering reports the error and keeps the chat going.
    failing = tmp_path / "raise.jinja"
    failing.write_text("{{ raise_exception('no ' ~ messages[-1].content) }}")
    r = bee("chat", "-m", smollm, "--chat-template-file", failing, input="hi\nagain\n")
    assert r.returncode == 0
    assert r.stderr.count("chat template raised an error: no ") == 2, r.stderr
