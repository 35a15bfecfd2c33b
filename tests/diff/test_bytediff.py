from hypothesis import given
from hypothesis import strategies as st

from fidelity import bytediff
from fidelity.bytediff import excerpt, first_divergence


def reference(a: bytes, b: bytes):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


@given(st.binary(max_size=300), st.binary(max_size=300))
def test_matches_byte_loop(a, b):
    assert first_divergence(a, b) == reference(a, b)


@given(st.text(max_size=300), st.text(max_size=300))
def test_matches_character_loop_on_strings(a, b):
    # the edited-text encoder (tokens._edits) finds a shared head of two texts with it
    assert first_divergence(a, b) == reference(a, b)
    assert first_divergence(a, a + b) == (None if not b else len(a))


@given(st.binary(min_size=1, max_size=200), st.integers(0, 199), st.integers(1, 255))
def test_single_flip_found_exactly(data, pos, flip):
    pos %= len(data)
    other = bytearray(data)
    other[pos] ^= flip
    assert first_divergence(data, bytes(other)) == pos
    assert first_divergence(bytes(other), data) == pos


def test_windows_and_bisection(monkeypatch):
    monkeypatch.setattr(bytediff, "_WINDOW", 7)
    a = bytes(range(256)) * 3
    for pos in (0, 6, 7, 8, 500, len(a) - 1):
        b = bytearray(a)
        b[pos] ^= 0xFF
        assert first_divergence(a, bytes(b)) == pos
    assert first_divergence(a, a + b"x") == len(a)
    assert first_divergence(a[:100], a) == 100


def test_excerpt_is_one_line_and_marks_position():
    text = excerpt(b'{"a":"x\nyz\x00"}', 7, width=4)
    assert "\n" not in text and "⟨here⟩" in text
    assert text.startswith("…") and text.endswith("…")
    assert excerpt(b"abc", 0) == "⟨here⟩abc"
