"""Each batch's learned lines (`LINES_AND_RULES` of the `test_<batch>_mechanisms` modules) are read
by the rule of their mechanism: one test for all the tables, which stay beside the tests of
their batch's other mechanisms."""

from __future__ import annotations

import pytest

import test_cs_mechanisms
import test_cu_mechanisms
import test_cw_mechanisms
import test_cx_mechanisms
import test_cy_mechanisms
import test_cz_mechanisms
import test_db_mechanisms
import test_dd_mechanisms
import test_df_mechanisms
import test_di_mechanisms
import test_dj_mechanisms
import test_dk_mechanisms
import test_dl_mechanisms
import test_dn_mechanisms
import test_do_mechanisms
import test_dq_mechanisms
import test_dr_mechanisms
import test_dt_mechanisms
import test_dv_mechanisms
import test_dx_mechanisms
import test_dy_mechanisms
import test_ea_mechanisms
import test_eb_mechanisms
import test_ec_mechanisms
import test_ed_mechanisms
import test_ee_mechanisms
import test_eg_mechanisms
import test_ei_mechanisms
import test_ej_mechanisms
import test_ek_mechanisms
import test_em_mechanisms
import test_en_mechanisms
import test_ep_mechanisms
import test_eq_mechanisms
import test_es_mechanisms
import test_field_probe_mechanisms
from mechanism_helpers import rules_hitting

TABLES = {
    "cs": test_cs_mechanisms.LINES_AND_RULES,
    "cu": test_cu_mechanisms.LINES_AND_RULES,
    "cw": test_cw_mechanisms.LINES_AND_RULES,
    "cx": test_cx_mechanisms.LINES_AND_RULES,
    "cy": test_cy_mechanisms.LINES_AND_RULES,
    "cz": test_cz_mechanisms.LINES_AND_RULES,
    "db": test_db_mechanisms.LINES_AND_RULES,
    "dd": test_dd_mechanisms.LINES_AND_RULES,
    "df": test_df_mechanisms.LINES_AND_RULES,
    "di": test_di_mechanisms.LINES_AND_RULES,
    "dj": test_dj_mechanisms.LINES_AND_RULES,
    "dk": test_dk_mechanisms.LINES_AND_RULES,
    "dl": test_dl_mechanisms.LINES_AND_RULES,
    "dn": test_dn_mechanisms.LINES_AND_RULES,
    "do": test_do_mechanisms.LINES_AND_RULES,
    "dq": test_dq_mechanisms.LINES_AND_RULES,
    "dr": test_dr_mechanisms.LINES_AND_RULES,
    "dt": test_dt_mechanisms.LINES_AND_RULES,
    "dv": test_dv_mechanisms.LINES_AND_RULES,
    "dx": test_dx_mechanisms.LINES_AND_RULES,
    "dy": test_dy_mechanisms.LINES_AND_RULES,
    "ea": test_ea_mechanisms.LINES_AND_RULES,
    "eb": test_eb_mechanisms.LINES_AND_RULES,
    "ec": test_ec_mechanisms.LINES_AND_RULES,
    "ed": test_ed_mechanisms.LINES_AND_RULES,
    "ee": test_ee_mechanisms.LINES_AND_RULES,
    "eg": test_eg_mechanisms.LINES_AND_RULES,
    "ei": test_ei_mechanisms.LINES_AND_RULES,
    "ej": test_ej_mechanisms.LINES_AND_RULES,
    "ek": test_ek_mechanisms.LINES_AND_RULES,
    "em": test_em_mechanisms.LINES_AND_RULES,
    "en": test_en_mechanisms.LINES_AND_RULES,
    "ep": test_ep_mechanisms.LINES_AND_RULES,
    "eq": test_eq_mechanisms.LINES_AND_RULES,
    "es": test_es_mechanisms.LINES_AND_RULES,
    "field": test_field_probe_mechanisms.LINES_AND_RULES,
}
CASES = [
    pytest.param(line, rule, id=f"{batch}-{index}-{rule}")
    for batch, table in TABLES.items()
    for index, (line, rule) in enumerate(table)
]


@pytest.mark.parametrize(("line", "rule"), CASES)
def test_the_line_is_read_by_the_rule_of_its_mechanism(line: str, rule: str) -> None:
    assert rule in rules_hitting(line)
