"""The print-size check reads the LaTeX log's figure and table lines and the figures' SVGs, and finds text that
prints below the legible minimum."""
import pytest

from snaptax.paper import printsize

SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="500" height="200"><text font-size="10px">a</text>'
       '<g><text style="font-family: sans; font-size: 8px">b</text><text font-size="11px">c</text></g></svg>')


@pytest.fixture
def figures(tmp_path):
    d = tmp_path / "figures"
    d.mkdir()
    (d / "chart.svg").write_text(SVG)
    return d


def test_a_figure_prints_its_smallest_font_scaled_to_its_printed_width(figures):
    assert printsize.svg_text(figures / "chart.svg") == (500.0, 8.0)
    log = "x\nsnaptax-print: figure chart width=250.0pt\nsnaptax-print: figure chart.pdf width=500.0pt\n"
    assert [(p.what, p.smallest_pt) for p in printsize.printed(log, figures)] == \
        [("figure chart", 4.0), ("figure chart", 8.0)]
    assert [p.smallest_pt for p in printsize.smallest(log, figures)] == [4.0]


def test_a_table_is_scaled_only_when_wider_than_the_line(figures):
    log = ("snaptax-print: table line=12 natural=600.0pt linewidth=300.0pt size=10.95\n"
           "snaptax-print: table line=40 natural=200.0pt linewidth=300.0pt size=9\n")
    assert [(p.what, p.smallest_pt) for p in printsize.printed(log, figures)] == \
        [("table at line 12", pytest.approx(5.475)), ("table at line 40", 9.0)]


def test_check_names_the_smallest_and_refuses_a_log_without_the_hook(figures, tmp_path):
    log = tmp_path / "paper.log"
    log.write_text("snaptax-print: figure chart width=500.0pt\n")
    assert len(printsize.check(log, figures)) == 1
    log.write_text("snaptax-print: figure chart width=300.0pt\nsnaptax-print: figure chart width=500.0pt\n")
    with pytest.raises(printsize.PrintSizeError, match=r"1 of 2 figures and tables .* figure chart at 4.8 pt"):
        printsize.check(log, figures)
    log.write_text("no hook here\n")
    with pytest.raises(printsize.PrintSizeError, match="lacks the print-size hook"):
        printsize.check(log, figures)
    log.write_text("snaptax-print: figure missing width=300.0pt\n")
    with pytest.raises(printsize.PrintSizeError, match="no SVG beside the figure"):
        printsize.check(log, figures)


def test_a_report_line_tex_wrapped_at_79_characters_is_read_whole(figures):
    line = "snaptax-print: table line=123456 natural=1000.12345pt linewidth=300.0pt size=10.95"
    assert len(line) > 79                                 # TeX wraps it after 79 characters
    wrapped = line[:79] + "\n" + line[79:] + "\n"
    assert [(p.what, round(p.smallest_pt, 3)) for p in printsize.printed(wrapped, figures)] == \
        [("table at line 123456", round(10.95 * 300 / 1000.12345, 3))]


def _figure(figures, px: float) -> None:
    (figures / "chart.svg").write_text(f'<svg xmlns="http://www.w3.org/2000/svg" width="500" height="200">'
                                       f'<text font-size="{px}px">a</text><text font-size="16px">b</text></svg>')


def test_a_figure_printing_text_under_7_pt_fails_the_check_and_one_at_7_pt_passes(figures, tmp_path):
    log = tmp_path / "paper.log"
    log.write_text("snaptax-print: figure chart width=250.0pt\n")
    _figure(figures, 14)                                  # 14 px drawn, printed at half size: 7 pt
    assert [p.smallest_pt for p in printsize.check(log, figures)] == [7.0]
    _figure(figures, 13.8)                                # 6.9 pt
    with pytest.raises(printsize.PrintSizeError, match=r"1 of 1 figures and tables print text below 7 pt; the "
                       r"smallest: figure chart at 6.9 pt"):
        printsize.check(log, figures)


def test_each_figure_prints_at_its_narrowest_width_in_either_document(tmp_path):
    (tmp_path / "sections").mkdir()
    (tmp_path / "snaptax.tex").write_text("\\includegraphics[width=\\textwidth]{a}\n"
                                          "\\includegraphics[width=0.5\\linewidth]{b.pdf}\n")
    (tmp_path / "supplement.tex").write_text("\\input{sections/s}\n\\input{sections/missing}\n")
    (tmp_path / "sections" / "s.tex").write_text("\\includegraphics[width=0.6\\linewidth]{a}\n"
                                                 "% \\includegraphics[width=0.1\\linewidth]{a}\n"
                                                 "\\includegraphics[scale=0.5]{c}\n")
    body, supplement = printsize.LINE_WIDTHS_PT["snaptax.tex"], printsize.LINE_WIDTHS_PT["supplement.tex"]
    assert printsize.figure_widths(tmp_path) == {"a": pytest.approx(0.6 * supplement["linewidth"]),
                                                 "b": pytest.approx(0.5 * body["columnwidth"])}
