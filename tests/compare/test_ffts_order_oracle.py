"""Which op each dump file is filed under, the op's mode and its files' order, against
msaccucmp's own index (``DumpInfo``) and sort (``sort_dump_file_list``) on random folders of
FFTS+ thread files, ``_lxslice`` files, ``sgt_graph`` prefixes and plain dumps.

The merge takes its slicing attribute, inputs and address from the first file of that order
and the CSV names its path: an order that differs from msaccucmp's shows in no metric of a
case where the files agree, so it is held to msaccucmp's here, name by name."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from fusion_switch.readers.dumpdir import scan_dump_dir
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from mapping_cases import number_files
from oracle import make_importable

pytestmark = pytest.mark.oracle

STAMP = 1700000000000000
MAX_EXAMPLES = 150
_OPS = st.sampled_from(
    ["f", "f", "f", "g", "f_lxslice0", "f_lxslice1", "f_lxslice2", "f_lxslice10", "f_lxslice11",
     "p_sgt_graph_0_f", "p_sgt_graph_0_f_lxslice1", "p_sgt_graph_0_f_lxslice3", "a_lxslice1_b"]
)  # fmt: skip
_NAME = st.tuples(
    _OPS,
    st.integers(1, 30),  # task id
    st.sampled_from([None, "1", "3"]),  # stream
    st.sampled_from([str(STAMP + k) for k in range(4)] + ["17"]),  # stamp, or none
    st.sampled_from([None, "0", "4", "4", "4"]),  # task type (None: a plain dump's name)
    st.integers(0, 12),  # thread
    st.sampled_from(["0", "0", "0", None]),  # device
)


def _file_name(op, task, stream, stamp, task_type, thread, device) -> str:
    fields = ["Relu", op, str(task), *([stream] if stream else []), stamp]
    if task_type is not None:
        fields += [task_type, "7", str(thread), *([device] if device else [])]
    return ".".join(fields)


def _msaccucmp_index(folder: Path) -> dict[str, tuple[int | None, list[str]]] | None:
    """msaccucmp's op -> (mode, files in its order); None where it stops on the names (a mode
    of None: where it stops on one op's names as it orders them)."""
    make_importable()
    from cmp_utils.constant.compare_error import CompareError
    from dump_parse import dump_utils
    from dump_parse.dump import DumpInfo

    info = DumpInfo(str(folder), 2, False, "graph.json")
    try:
        info._make_op_name_to_file_map()
    except CompareError:
        return None
    index = {}
    for op, files in info.op_name_to_file_map.items():
        mode = info.op_name_to_task_mode_map[op]
        try:
            index[op] = (mode, dump_utils.sort_dump_file_list(mode, list(files)))
        except IndexError:  # a name of four fields among FFTS+ ones: it stops there
            index[op] = (None, files)
    return index


@settings(
    max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.filter_too_much]
)
@given(st.lists(_NAME, min_size=1, max_size=7))
def test_ops_modes_and_orders_are_msaccucmp_s(names):
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root)
        for fields in names:
            (folder / _file_name(*fields)).write_bytes(b"")
        theirs = _msaccucmp_index(folder)
        assume(theirs is not None)  # a name it stops on: test_ffts_slices_oracle.py
        ours = scan_dump_dir(folder)
        assert sorted(ours.op_names) == sorted(theirs)
        for op, (mode, files) in theirs.items():
            if len(files) < 2:
                continue  # one file: compared as it is, in any mode
            event(f"an op of several files in mode {mode}")
            if mode is None:
                assert "fifth dot field" in ours.ffts_mode(op), op
                continue
            assert (ours.ffts_mode(op) or 0) == mode, op
            assert [str(n.path) for n in ours.entries(op)] == files, op


@settings(
    max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.filter_too_much]
)
@given(st.lists(st.tuples(_NAME, st.booleans()), min_size=1, max_size=7))
def test_numeric_names_of_mapping_csv_are_filed_and_ordered_as_msaccucmp_does(named):
    """The same with some files named by number, their real names in mapping.csv: msaccucmp
    files them under the real name's op and reads its mode from it, but sorts them by the
    number (as thread, slice and stamp 1; :mod:`mapping_cases`)."""
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root)
        numbered = set()
        for fields, by_number in named:
            (folder / _file_name(*fields)).write_bytes(b"")
            if by_number:
                numbered.add(_file_name(*fields))
        number_files(folder, lambda name: name in numbered)
        theirs = _msaccucmp_index(folder)
        assume(theirs is not None)
        ours = scan_dump_dir(folder)
        assert sorted(ours.op_names) == sorted(theirs)
        for op, (mode, files) in theirs.items():
            if len(files) < 2:
                continue
            numeric = any(Path(file).name.isdigit() for file in files)
            event(f"an op of several files in mode {mode}" + ", numeric ones" * numeric)
            if mode is None:
                assert "fifth dot field" in ours.ffts_mode(op), op
                continue
            assert (ours.ffts_mode(op) or 0) == mode, op
            assert [str(n.path) for n in ours.entries(op)] == files, op
