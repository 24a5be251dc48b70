from emailops.core.line_endings import (
    line_ending,
    lines,
    only_line_endings_differ,
    with_line_endings_of,
)


def test_the_ending_is_the_files_usual_one():
    assert line_ending(None) == line_ending("") == line_ending("one line") == "\n"
    assert line_ending("a\r\nb\r\nc\n") == "\r\n"
    assert line_ending("a\nb\nc\r\n") == "\n"


def test_text_takes_the_endings_of_the_file_it_replaces():
    assert with_line_endings_of("a\r\nb\r\n", "x\ny\n") == "a\nb\n"
    assert with_line_endings_of("a\nb\rc\r\n", "x\r\ny\r\n") == "a\r\nb\r\nc\r\n"
    assert with_line_endings_of("a\r\nb", None) == "a\nb"


def test_lines_and_a_change_of_endings_alone():
    assert lines("a\r\nb\rc\n") == ["a", "b", "c", ""]
    assert only_line_endings_differ("a\nb\n", "a\r\nb\r\n")
    assert not only_line_endings_differ("a\nb\n", "a\nb\n")
    assert not only_line_endings_differ("a\nb\n", "a\nc\n")
