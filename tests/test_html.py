"""The HTML view of a result, checked as text and in a real headless Chromium."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from grammar_guide import (
    Alternative,
    Correction,
    Cut,
    DraftSpan,
    Grammar,
    GrammarRefused,
    GrammarViolation,
    GuideResult,
    GuideStats,
)
from grammar_guide._html import render_fragment, render_html
from tests.support.browser import browser_context, screenshot_path


class Story:
    """Builds the events of a guided run the way the loop reports them (offsets in the accepted text)."""

    def __init__(self) -> None:
        self.text = ""
        self.events: list = []

    def draft(self, text: str, call: int) -> None:
        self.events.append(DraftSpan(len(self.text), text, call))
        self.text += text

    def violate(self, rejected: str, expected: list[str], call: int) -> None:
        line = self.text.count("\n") + 1
        column = len(self.text) - (self.text.rfind("\n") + 1) + 1
        self.events.append(GrammarViolation(len(self.text), rejected, tuple(expected), line, column, call))

    def take_back(self, n: int, rejected: str, call: int) -> None:
        """A repair takes back the last ``n`` accepted characters: they lead the rejected text."""
        offset = len(self.text) - n
        line = self.text[:offset].count("\n") + 1
        column = offset - (self.text[:offset].rfind("\n") + 1) + 1
        self.events.append(GrammarViolation(offset, self.text[offset:] + rejected, (), line, column, call))
        self.text = self.text[:offset]

    def correct(self, text: str, source: str, **kw) -> None:
        self.events.append(Correction(len(self.text), text, source, **kw))  # type: ignore[arg-type]
        self.text += text

    def heal(self, text: str, **kw) -> None:
        assert self.text.endswith(text)
        self.events.append(Correction(len(self.text) - len(text), text, "healed", **kw))

    def cut(self, text: str, reason: str, call: int, detail: str = "") -> None:
        self.events.append(Cut(len(self.text), text, reason, call, detail))  # type: ignore[arg-type]


JSON_PROMPT = "Describe Ada Lovelace as a JSON object"


def json_result() -> GuideResult:
    """A run with every kind of event, on the real JSON grammar."""
    s = Story()
    s.draft('{"name": "Ada Lovelace", "born": 1815, "alive": ', 0)
    s.violate(
        "False, 'languages': ['English', 'French']}",
        ['"false"', '"true"', '"null"', "NUMBER", "STRING", '"{"', '"["'],
        0,
    )
    s.correct("false", "repair", detail="replaced 'False' with 'false' (nearest keyword)")
    s.draft(", ", 1)
    s.violate("'languages': ['English', 'French']}", ["STRING"], 1)
    s.heal(", ", tokens=1, seconds=0.021)
    s.correct('"', "forced", tokens=1)
    s.correct(
        'languages": [',
        "target",
        tokens=3,
        seconds=0.142,
        alternatives=(
            Alternative("languages", 0.612),
            Alternative("known", 0.174),
            Alternative("lang", 0.088),
            Alternative("skills", 0.041),
        ),
    )
    s.draft('"English", "French"], "field": "mathematics"}', 2)
    s.cut("\n\nHope this helps! <b>Let me know</b>", "after complete text", 2, detail="an explanation")
    stats = GuideStats(
        draft_calls=3,
        draft_tokens_in=412,
        draft_tokens_out=57,
        discarded_tokens=19,
        discarded_chars=82,
        target_tokens=4,
        forced_tokens=1,
        healed_tokens=1,
        corrections=4,
        draft_seconds=1.83,
        check_seconds=0.004,
        target_seconds=0.163,
        total_seconds=2.05,
    )
    return GuideResult(s.text, JSON_PROMPT, "json", s.events, stats)


PAYLOADS = [
    "<script>window.__pwned = 'script'</script>",
    "</div></pre><img src=x onerror=\"window.__pwned='img'\">",
    "<svg onload=\"window.__pwned='svg'\"></svg>",
]
ATTR_PAYLOAD = '" onmouseover="window.__pwned=\'attr\'" data-x="'


def hostile_result() -> GuideResult:
    """Model text that would run script if any of it were not escaped."""
    s = Story()
    s.draft('["' + PAYLOADS[0].replace('"', "'") + '", ', 0)
    s.violate(PAYLOADS[1], [ATTR_PAYLOAD, "STRING"], 0)
    s.correct(
        '"' + PAYLOADS[2].replace('"', "'") + '"',
        "target",
        alternatives=(Alternative(ATTR_PAYLOAD, 0.9),),
        detail=ATTR_PAYLOAD,
    )
    s.correct("]", "forced")
    s.cut(PAYLOADS[1] + ATTR_PAYLOAD, ATTR_PAYLOAD, 0)
    return GuideResult(s.text, PAYLOADS[1] + ATTR_PAYLOAD, "json" + ATTR_PAYLOAD, s.events, GuideStats(draft_calls=1))


# -- as text ----------------------------------------------------------------------------------


def test_fixture_texts_are_valid_json_under_the_real_grammar() -> None:
    grammar = Grammar.builtin("json")
    assert grammar.is_complete(json_result().text)
    assert grammar.is_complete(hostile_result().text)


def test_page_is_self_contained_and_forbids_scripts() -> None:
    page = render_html(json_result())
    assert page.startswith("<!doctype html>")
    assert "script-src 'none'" in page and "default-src 'none'" in page
    assert "<script" not in page.lower()
    # Nothing is loaded from elsewhere.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<link" not in page


def test_rendering_is_a_pure_function_of_the_result() -> None:
    result = json_result()
    again = GuideResult.from_dict(result.to_dict())
    assert render_html(again) == render_html(result) == result.to_html()
    assert result._repr_html_() == render_fragment(result)


def test_hostile_text_is_escaped_everywhere() -> None:
    page = render_html(hostile_result())
    lowered = page.lower()
    assert "<script" not in lowered
    assert "<img" not in lowered
    assert "<svg" not in lowered
    assert "onmouseover=" not in lowered.replace("onmouseover=&quot;", "")
    assert "&lt;script&gt;" in page


def test_events_that_do_not_rebuild_the_text_are_reported_and_the_text_shown(tmp_path: Path) -> None:
    result = json_result()
    result.text = result.text.replace("Ada", "Bob")
    fragment = render_fragment(result)
    assert 'data-exact="false"' in fragment
    assert "do not rebuild the final text" in fragment
    assert "Bob Lovelace" in fragment


def test_a_refused_grammar_is_rendered_with_the_text_it_left_to_the_draft() -> None:
    # A provider that refused the grammar: the draft then wrote freely (before: AttributeError).
    events = [GrammarRefused(0, "400 grammar too complex", call=1), DraftSpan(0, '{"a": 1}', call=1)]
    result = GuideResult('{"a": 1}', "p", "json", events, GuideStats(path="fallback"))
    page = render_html(result)
    assert 'data-exact="true"' in page
    assert page.count('class="gg-ev"') == 1 and "draft call 1" in page


def test_save_html_writes_the_page(tmp_path: Path) -> None:
    path = json_result().save_html(tmp_path / "trace.html")
    assert path.read_text(encoding="utf-8") == render_html(json_result())


# -- in a real browser --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def context() -> Iterator[object]:
    with browser_context() as ctx:
        yield ctx


@pytest.fixture
def page(context):  # type: ignore[no-untyped-def]
    page = context.new_page()
    page.set_default_timeout(10_000)
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.requests = requests
    yield page
    page.close()


def open_result(page, result: GuideResult, tmp_path: Path, name: str = "trace.html"):  # type: ignore[no-untyped-def]
    path = result.save_html(tmp_path / name)
    page.goto(path.as_uri())
    return path


KEPT_TEXT_JS = """() => Array.from(document.querySelectorAll('.gg-text .gg-seg'))
  .filter(e => !['violation', 'cut'].includes(e.dataset.kind))
  .map(e => e.querySelector('.gg-t').textContent).join('')"""


def test_browser_shows_each_kind_of_segment_and_the_text(page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = json_result()
    path = open_result(page, result, tmp_path)
    kinds = page.eval_on_selector_all(".gg-text .gg-seg", "els => els.map(e => e.dataset.kind)")
    for kind in ("draft", "target", "forced", "healed", "repair", "violation", "cut"):
        assert kind in kinds, kind
    # The kept segments spell the final text exactly; the discarded ones are struck through.
    assert page.evaluate(KEPT_TEXT_JS) == result.text
    violations = page.eval_on_selector_all(
        ".gg-text .gg-violation > .gg-t",
        "els => els.map(e => [e.textContent, getComputedStyle(e.parentElement).textDecorationLine])",
    )
    assert violations == [
        ["False, 'languages': ['English', 'French']}", "line-through"],
        ["'languages': ['English', 'French']}", "line-through"],
    ]
    cut = page.locator(".gg-text .gg-cut > .gg-t")
    assert cut.text_content() == "\n\nHope this helps! <b>Let me know</b>"
    # Discarded text stands where it was cut: the first rejection right after `"alive": `.
    order = page.eval_on_selector_all(".gg-text .gg-seg", "els => els.map(e => e.dataset.kind)")
    assert order[:3] == ["draft", "violation", "repair"]
    # The kinds look different from each other.
    backgrounds = page.eval_on_selector_all(
        ".gg-text .gg-seg",
        "els => Object.fromEntries(els.map(e => [e.dataset.kind, getComputedStyle(e).backgroundColor]))",
    )
    assert len(set(backgrounds.values())) == 7
    assert page.requests == [path.as_uri()]


def test_browser_shows_legend_and_summary(page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    open_result(page, json_result(), tmp_path)
    legend = page.locator(".gg-legend .gg-legend-item")
    assert legend.count() == 8
    assert [t.split("\n")[-1] for t in legend.all_inner_texts()] == [
        "Drafted, kept",
        "Chosen by the target",
        "Forced by the grammar",
        "Healed token boundary",
        "Repaired draft",
        "Closed by the grammar",
        "Drafted, rejected by the grammar",
        "Drafted, cut",
    ]
    assert legend.evaluate_all("els => els.map(e => e.dataset.kind)") == [
        "draft",
        "target",
        "forced",
        "healed",
        "repair",
        "completion",
        "violation",
        "cut",
    ]
    assert page.locator(".gg-badge[data-valid]").inner_text() == "✓ valid & complete"
    # Beside it, what was changed of the draft's answer: a repair and the target's text.
    faithful = page.locator(".gg-badge[data-faithful]")
    assert faithful.get_attribute("data-faithful") == "false"
    assert faithful.inner_text() == "1 edit, 1 invented"
    stat = lambda key: page.locator(f'.gg-stat[data-stat="{key}"] .gg-stat-v').inner_text()  # noqa: E731
    assert stat("calls") == "3"
    assert stat("tokens") == "412 / 57"
    assert stat("discarded").startswith("19")
    assert stat("corrections") == "4"
    assert stat("time").startswith("2.05 s")
    assert page.locator(".gg-prompt q").inner_text() == JSON_PROMPT


def test_browser_hover_and_focus_show_correction_details(page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    open_result(page, json_result(), tmp_path)
    target = page.locator(".gg-text .gg-target")
    tip = target.locator(".gg-tip")
    assert not tip.is_visible()
    target.hover()
    assert tip.is_visible()
    text = tip.inner_text()
    assert "Chosen by the target" in text
    assert "STRING" in text  # the expected terminals at that point
    assert "61.2%" in text and "known" in text  # the target's alternatives
    assert "142 ms" in text and "3 tokens" in text  # timing
    assert "line 1, column 57" in text
    page.screenshot(path=str(screenshot_path("html-trace.png")), full_page=True)

    # Keyboard: tabbing reaches the first rejected text, whose details then show.
    page.mouse.move(0, 0)
    assert not tip.is_visible()
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.dataset.kind")
    assert focused == "violation"
    violation_tip = page.locator(".gg-text .gg-violation").first.locator(".gg-tip")
    assert violation_tip.is_visible()
    assert '"false"' in violation_tip.inner_text() and "line 1, column 49" in violation_tip.inner_text()
    page.keyboard.press("Tab")
    repair_tip = page.locator(".gg-text .gg-repair .gg-tip")
    assert repair_tip.is_visible() and "nearest keyword" in repair_tip.inner_text()
    assert not violation_tip.is_visible()


def test_browser_timeline_says_what_each_correction_changed_and_why(page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    open_result(page, json_result(), tmp_path)
    page.locator(".gg-timeline summary").click()
    notes = page.locator(".gg-timeline .gg-ev .gg-ev-note").all_inner_texts()
    kinds = page.locator(".gg-timeline .gg-ev").evaluate_all("els => els.map(e => e.dataset.kind)")
    by_kind = {}
    for kind, note in zip(kinds, notes, strict=True):
        by_kind.setdefault(kind, note)
    # The repair's row names the edit and the rejected text it answered, not a generic phrase.
    assert by_kind["repair"].startswith("replaced 'False' with 'false'")
    assert "the draft wrote \"False, 'languages'" in by_kind["repair"] and "expected" in by_kind["repair"]
    assert by_kind["target"].startswith("the target wrote 'languages\": ['")
    assert by_kind["forced"].startswith("inserted '\"'")
    assert by_kind["healed"].startswith("re-chose ', '")
    assert by_kind["cut"] == "text after a complete answer (an explanation)"
    assert not any(note.strip() == "the draft broke the grammar here" for note in notes)


def test_browser_timeline_links_to_segments(page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    open_result(page, json_result(), tmp_path)
    page.locator(".gg-timeline summary").click()
    rows = page.locator(".gg-timeline .gg-ev")
    assert rows.count() == len(json_result().events)
    rows.nth(6).locator("a").click()
    assert page.evaluate("document.querySelector(':target').dataset.kind") == "forced"


HOSTILE_CHECK_JS = """() => ({
  pwned: window.__pwned === undefined ? null : String(window.__pwned),
  imgs: document.querySelectorAll('img').length,
  scripts: document.querySelectorAll('script').length,
  svgs: document.querySelectorAll('svg').length,
  handlers: Array.from(document.querySelectorAll('*'))
    .filter(e => Array.from(e.attributes).some(a => a.name.startsWith('on'))).length,
})"""


def _hover_everything(page) -> None:  # type: ignore[no-untyped-def]
    for seg in page.locator(".gg-text .gg-seg").all():
        seg.hover()
    for item in page.locator(".gg-legend-item").all():
        item.hover()


def test_browser_hostile_page_runs_no_script(page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = hostile_result()
    open_result(page, result, tmp_path, "hostile.html")
    _hover_everything(page)
    assert page.evaluate(HOSTILE_CHECK_JS) == {"pwned": None, "imgs": 0, "scripts": 0, "svgs": 0, "handlers": 0}
    assert page.evaluate(KEPT_TEXT_JS) == result.text
    # The payloads are shown as text.
    body = page.locator(".gg-text").text_content()
    assert PAYLOADS[1] in body and ATTR_PAYLOAD in body
    assert page.title() == "grammar-guide · json" + ATTR_PAYLOAD
    page.screenshot(path=str(screenshot_path("html-hostile.png")), full_page=True)


def test_browser_hostile_fragment_is_escaped_without_the_pages_policy(page) -> None:  # type: ignore[no-untyped-def]
    # The notebook fragment has no Content Security Policy: escaping alone must hold.
    result = hostile_result()
    page.set_content(f"<!doctype html><html><body><p id=host>host</p>{result._repr_html_()}</body></html>")
    _hover_everything(page)
    assert page.evaluate(HOSTILE_CHECK_JS) == {"pwned": None, "imgs": 0, "scripts": 0, "svgs": 0, "handlers": 0}
    assert page.evaluate(KEPT_TEXT_JS) == result.text
    tip = page.locator(".gg-text .gg-target .gg-tip")
    page.locator(".gg-text .gg-target").hover()
    assert ATTR_PAYLOAD in tip.inner_text()


def test_browser_notebook_fragments_keep_to_themselves(page) -> None:  # type: ignore[no-untyped-def]
    first, second = json_result(), hostile_result()
    page.set_content(
        "<!doctype html><html><body><p id=host style='font-size:20px'>host text</p>"
        f"{first._repr_html_()}{second._repr_html_()}</body></html>"
    )
    ids = page.eval_on_selector_all("[id]", "els => els.map(e => e.id)")
    assert len(ids) == len(set(ids))
    assert page.locator(".gg").count() == 2
    host = page.evaluate("getComputedStyle(document.getElementById('host')).color")
    assert host == "rgb(0, 0, 0)"
    page.locator(".gg").nth(1).locator(".gg-text .gg-target").hover()
    assert page.locator(".gg").nth(1).locator(".gg-text .gg-target .gg-tip").is_visible()


def test_browser_incomplete_result_says_so(page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    s = Story()
    s.draft('{"name": ', 0)
    s.violate("Ada}", ["STRING"], 0)
    result = GuideResult(s.text, "p", "json", s.events, GuideStats(draft_calls=5), complete=False)
    open_result(page, result, tmp_path)
    badge = page.locator(".gg-badge[data-valid]")
    assert badge.get_attribute("data-valid") == "false"
    assert "incomplete" in badge.inner_text()
    assert page.locator('.gg-stat[data-stat="tokens"] .gg-stat-v').inner_text() == "n/a / n/a"


def test_browser_renders_a_real_guided_run(page, tmp_path: Path, small_sql: Grammar) -> None:  # type: ignore[no-untyped-def]
    import grammar_guide as gg

    # A chat draft that stops short, then restates its whole answer when asked to go on.
    answers = iter(
        [
            "Sure! Here is the query:\nSELECT name age FROM users ORDER BY",
            "Sure! Here is the query:\nSELECT name age FROM users ORDER BY age DESC LIMT 5;\nThat's all.",
        ]
    )

    def draft(prompt: str, prefix: str) -> str:
        return next(answers)

    result = gg.guide(draft, small_sql, "The names of the five oldest users", target=False)
    assert result.complete
    open_result(page, result, tmp_path, "real.html")
    assert page.locator(".gg-text").get_attribute("data-exact") == "true"
    assert page.evaluate(KEPT_TEXT_JS) == result.text
    struck = page.eval_on_selector_all(
        ".gg-text .gg-seg",
        "els => els.filter(e => ['violation', 'cut'].includes(e.dataset.kind)).map(e => e.textContent)",
    )
    assert any("Sure! Here is the query:" in t for t in struck)
    assert any(t.startswith("LIMT") for t in struck)
    repairs = page.locator(".gg-text .gg-repair > .gg-t").all_text_contents()
    assert repairs == [e.text for e in result.events if isinstance(e, Correction) and e.source == "repair" and e.text]
    # Text a restating draft repeated is a small marker whose details hold the text.
    restated = [e for e in result.events if isinstance(e, Cut) and e.reason == "restated"]
    markers = page.locator(".gg-text .gg-restated")
    assert markers.count() == len(restated) > 0
    assert markers.first.locator(".gg-t").inner_text() == f"↻ {len(restated[0].text)}"
    markers.first.hover()
    assert "restated" in markers.first.locator(".gg-tip").inner_text()
    assert page.locator('.gg-legend-item[data-kind="restated"]').count() == 1
    page.screenshot(path=str(screenshot_path("html-real-run.png")), full_page=True)


# -- any sequence of events -------------------------------------------------------------------------

from html.parser import HTMLParser  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


class _KeptText(HTMLParser):
    """Collects the text of the kept segments of the page's text, as a browser would read it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[dict[str, str | None]] = []
        self.kept: list[str] = []
        self.struck: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag not in ("meta", "br", "img", "link", "input"):
            self.stack.append({"tag": tag, **dict(attrs)})

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1]["tag"] == tag, (tag, self.stack[-1:])
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        if len(self.stack) < 3 or self.stack[-1].get("class") != "gg-t":
            return
        seg, pre = self.stack[-2], self.stack[-3]
        if pre.get("class") != "gg-text" or "gg-seg" not in (seg.get("class") or ""):
            return
        (self.struck if seg.get("data-kind") in ("violation", "cut") else self.kept).append(data)


_chars = st.text(alphabet=st.sampled_from(list("ab <>&\"'/=\n{}x")), min_size=1, max_size=8)

_steps = st.lists(
    st.one_of(
        st.tuples(st.just("draft"), _chars),
        st.tuples(st.just("violate"), _chars),
        st.tuples(st.sampled_from(["target", "forced", "repair"]), _chars),
        st.tuples(st.just("heal"), st.integers(1, 3)),
        st.tuples(st.just("cut"), _chars),
        st.tuples(st.just("take_back"), st.tuples(st.integers(1, 4), _chars)),
        st.tuples(st.just("reuse"), st.tuples(_chars, _chars, _chars, _chars)),
    ),
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(_steps)
def test_any_event_sequence_rebuilds_the_text_and_escapes_it(steps: list[tuple[str, object]]) -> None:
    s = Story()
    for kind, arg in steps:
        if kind == "draft":
            s.draft(str(arg), 1)
        elif kind == "violate":
            s.violate(str(arg), ["<T>", '"x"'], 1)
        elif kind == "heal":
            n = min(int(arg), len(s.text))  # type: ignore[call-overload]
            if n:
                s.heal(s.text[-n:])
        elif kind == "cut":
            s.cut(str(arg), "<after>", 1)
        elif kind == "take_back":
            n, rejected = arg  # type: ignore[misc]
            if n <= len(s.text):
                s.take_back(n, rejected, 1)
        elif kind == "reuse":
            # The repair keeps part of the rejected text as the draft's own (a nearest keyword).
            before, middle, after, fix = arg  # type: ignore[misc]
            s.violate(before + middle + after, ["X"], 1)
            s.correct(fix, "repair")
            s.draft(middle, 1)
        else:
            s.correct(str(arg), kind, alternatives=(Alternative(str(arg), 0.5),), detail='<b x="1">')
    result = GuideResult(s.text, "<p>", "g<", s.events, GuideStats())
    page = render_html(result)
    parser = _KeptText()
    parser.feed(page)
    parser.close()
    assert not parser.stack
    assert "".join(parser.kept) == result.text
    assert 'data-exact="true"' in page
    # Only the page's own elements: nothing from the text became markup.
    assert set(parser.tags) <= {
        "html",
        "head",
        "meta",
        "title",
        "style",
        "body",
        "div",
        "header",
        "span",
        "code",
        "p",
        "q",
        "ul",
        "li",
        "pre",
        "details",
        "summary",
        "ol",
        "a",
    }
    assert "<b " not in page and "<p>" not in page
