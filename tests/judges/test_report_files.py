"""The judges' report CSVs: system names and judge names come from registrations and imports,
so a name that a spreadsheet would run as a formula is written as text (OWASP CSV injection)."""

from __future__ import annotations

import csv
import io

from judges.report import report_files


def test_judge_csvs_write_formula_names_as_text_and_keep_negative_numbers():
    base = {"run_name": "=cmd|' /C calc'!A0", "judge": "@judge", "job_name": "MSDE"}
    section = {
        "evaluations": [
            {
                **base,
                "agreement": [],
                "length_bias": [{"dimension": "-info", "n": 8, "judge_length_r": -0.25}],
                "position_bias": [],
                "win_rates": [
                    {
                        "question": "info",
                        "system_1": '=HYPERLINK("http://evil.test")',
                        "system_2": "+B",
                        "wins": 3,
                        "losses": 1,
                        "ties": 0,
                        "n": 4,
                        "win_rate": 0.75,
                    }
                ],
            }
        ],
        "notes": [],
    }
    files = report_files(section)
    wins = list(csv.DictReader(io.StringIO(files["judges_win_rates.csv"].decode("utf-8-sig"))))
    assert wins[0]["system_1"] == '\'=HYPERLINK("http://evil.test")'
    assert (wins[0]["system_2"], wins[0]["judge_run"], wins[0]["judge"]) == (
        "'+B",
        "'=cmd|' /C calc'!A0",
        "'@judge",
    )
    assert wins[0]["win_rate"] == "0.75"
    bias = list(csv.DictReader(io.StringIO(files["judges_bias.csv"].decode("utf-8-sig"))))
    assert (bias[0]["dimension"], bias[0]["judge_length_r"]) == ("'-info", "-0.25")
