"""Clustered covariance and design diagnostics reduced inside the engine: pass 2 in SQL.

A log too large for memory stays with its engine (:mod:`winrate.io.scan`). The fit is the
key log's (pass 1): key k, a row of the key table, has the influence ``U_k`` of its
``F_k`` comparisons, and a source row r of key k has ``u_r = U_k w_r / F_k`` (exact: the
estimating equations are sums of a function of the key). Python uploads one small table
(:meth:`KeyFit.table`: per key its raw values, a row per stored entry ``v_kj = U_kj / F_k``
of its influence with ``v_kj^2``, its centred score ``d_k`` and weight marker ``u = 1`` on
one of its rows, its pair, CR2 stratum, and model rows where the entries are not each
model's own column) and the engine reduces the rows to what
:func:`winrate.variance.cluster_sums.clustered` reads, in SQL that runs unchanged on
DuckDB and Spark:

* ``G`` (per term, kept while read): the rows joined to that table
  (:meth:`winrate.io.scan.Scan.rows_joined`) and grouped once by (cluster, idx): the
  cluster totals ``t_gj = sum_r v_kj w_r c_gk`` and the sums of squared rows ``s_gj =
  sum_r v_kj^2 w_r^2 c_gk^2``, with ``c_gk = 1`` or, for CR2, the leverage factor ``(1 -
  m_gh / n_h)^{-1/2}`` of the key's stratum h (Bell & McCaffrey 2002), ``m_gh`` the
  weight of the cluster's rows of stratum h, ``n_h`` the stratum's total in the key log
  (:func:`winrate.variance.meats.stratum_leverage_scale`); for an axis also the
  cluster's size ``n_g = sum u w`` and sum of centred scores ``S_g = sum d w``;
* from ``G``, one query: the meat ``sum_g t_g t_g^T`` as (i <= j) entries (``G`` joined
  with itself on the cluster), per column ``sum_g s_gj`` (row squares), ``sum_g s_gj^2``
  (spread), ``sum_g t_gj^4``, the largest ``t_gj^2`` and its cluster (the least label on
  ties), and the number of clusters with entries: the
  :class:`~winrate.variance.meats.GroupMeat` of the term; for an axis also the clusters
  each model appears in and the ANOVA ICC's moments -- the number of clusters, their
  total and squared sizes, and ``sum_g S_g^2 / n_g``
  (:func:`winrate.variance.diagnostics.icc_of_moments`);
* for a term of several axes without CR2 (a prompt x judge cell holds a row or a few),
  first one grouping by cluster alone (its least and largest key and the sums of its
  weights and squared weights): the clusters of one key add ``W_g^2 v_k v_k^T`` and
  the like, reduced per key in the engine and formed in Python
  (:meth:`KeyFit.one_key_meat`); only the clusters of several keys go through ``G`` and
  its self-join;
* once for all axes, the single-cluster pairs (each pair's least and largest label);
  where an axis has such a pair, the same ICC moments over (cluster, pair) cells
  (:meth:`EngineSums.same_pair_icc`).

Where a term's grouping would outgrow half the engine's memory (its groups estimated from
the rows, the key table and its clusters: :meth:`EngineSums._plan`), the term runs in
slices of its clusters -- ranges of the labels of its axis of most clusters, so a source
stored in that axis' order reads only each slice's row groups
(:meth:`winrate.io.scan.Scan.cluster_slices`) -- and the slices' sums add up; a term of
few clusters (a judge axis of a long log) sums the rows per (cluster, key) before the join
(``grouped`` in :meth:`winrate.io.scan.Scan.rows_joined`), which every sum above allows:
each is linear in a row's weight or in its square.

Python receives O(q^2) numbers per term and O(L + P) per axis, never a row or, but for a
term's largest cluster, a label. Every number equals the in-memory computation up to the
order of floating-point sums. :class:`EngineSums` is this form of
:class:`~winrate.variance.cluster_sums.ClusterSums`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp

from winrate.errors import WinrateInputError
from winrate.io.scan import Scan, engine_memory
from winrate.variance import diagnostics
from winrate.variance.cluster_sums import AxisDesign, ClusterSums
from winrate.variance.meats import GroupMeat, require_two_clusters, subsets


@dataclass
class KeyFit:
    """The fit of the key log as the engine reads it: the ``influence`` rows, ``pair``
    and ``centered`` per fitted key row, ``frequency`` F per fitted key row, its models
    ``model_a``/``model_b``, each model's comparisons ``n_per_model``, ``key_rows``
    mapping a key of the scan to its row of the fit (-1: left out by the estimator), and
    the CR2 ``strata`` per fitted row with ``stratum_total`` (None without CR2)."""

    influence: sp.csr_array | np.ndarray
    pair: np.ndarray
    centered: np.ndarray
    frequency: np.ndarray
    model_a: np.ndarray
    model_b: np.ndarray
    n_per_model: np.ndarray
    n_pairs: int
    key_rows: np.ndarray
    strata: np.ndarray | None = None
    stratum_total: np.ndarray | None = None
    grand_mean: float = field(init=False)

    def __post_init__(self):
        self.grand_mean = float(self.frequency @ self.centered / self.frequency.sum())

    @property
    def squares(self) -> float:
        """The key log's sum of squared centred scores (the ICC's total sum of squares)."""
        return float(self.frequency @ (self.centered - self.grand_mean) ** 2)

    @property
    def n_columns(self) -> int:
        return int(self.influence.shape[1])

    def model_columns_are_entries(self) -> bool:
        """Whether each fitted key's stored influence entries are exactly the columns of
        its two models (column i of model i): then a (cluster, column) total exists
        where the model appears in the cluster, and the entries count each model's
        clusters without rows of their own."""
        n_models = self.n_per_model.shape[0]
        if self.n_columns != n_models:
            return False
        entries = _entries(self.influence, np.arange(self.pair.shape[0]))
        stored = sp.csr_array((np.ones(entries.nnz), (entries.row, entries.col)),
                              shape=(self.pair.shape[0], n_models))
        rows = np.arange(self.pair.shape[0])
        models = sp.csr_array((np.ones(2 * rows.size), (np.concatenate([rows, rows]),
                               np.concatenate([self.model_a, self.model_b]))),
                              shape=stored.shape)
        return (stored != models).nnz == 0

    def table(self, raw: pd.DataFrame, model_rows: bool) -> pd.DataFrame:
        """The one table the engine joins to the rows (module doc): per fitted key its
        raw values (``raw``, pass 1's key table in key order) as ``winrate_k0, ...``, on
        rows told apart by ``winrate_idx``:

        * a stored influence entry: ``idx = j`` (its column), ``v = U_kj / F_k``,
          ``v2 = v^2``; the key's first entry also carries the key once, ``u = 1`` and
          ``d`` its centred score (``u = d = 0`` on the others);
        * a key without stored entries: ``idx = -1``, ``u = 1``, ``d``, nothing else;
        * with ``model_rows``, each of its models m: ``idx = q + m``, nothing summed.

        So each key has one row with ``u = 1``. Every row carries the key's position
        ``key`` among the fitted keys (:meth:`one_key_meat`), its ``pair`` and, with CR2
        strata, its ``stratum`` and the stratum's total ``n``."""
        rows = self.key_rows[self.key_rows >= 0]
        kept = np.flatnonzero(self.key_rows >= 0)
        values = {f"winrate_k{i}": _plain(raw[c].to_numpy()[kept])
                  for i, c in enumerate(raw.columns)}
        entries = _entries(self.influence, rows)
        order = np.lexsort((entries.col, entries.row))
        key, col, v = entries.row[order], entries.col[order], entries.data[order]
        v = v / self.frequency[rows][key]
        first = np.r_[True, key[1:] != key[:-1]] if key.size else np.zeros(0, bool)
        dev = self.centered[rows] - self.grand_mean
        bare = np.flatnonzero(np.bincount(key, minlength=rows.size) == 0)
        q = self.n_columns
        parts = [(key, col, v, v * v, first, np.where(first, dev[key], 0.0)),
                 (bare, -1, 0.0, 0.0, 1.0, dev[bare])]
        if model_rows:
            every = np.arange(rows.size)
            parts += [(every, q + models[rows], 0.0, 0.0, 0.0, 0.0)
                      for models in (self.model_a, self.model_b)]
        return pd.concat([self._rows(values, rows, *part) for part in parts],
                         ignore_index=True)

    def _rows(self, values: dict, rows: np.ndarray, which: np.ndarray, idx, v, v2, u,
              d) -> pd.DataFrame:
        """Rows of :meth:`table` for the fitted keys ``which`` (positions in ``rows``)."""
        frame = pd.DataFrame({name: column[which] for name, column in values.items()})
        for name, part, kind in (("winrate_idx", idx, np.int64), ("winrate_v", v, float),
                                 ("winrate_v2", v2, float), ("winrate_u", u, float),
                                 ("winrate_d", d, float)):
            frame[name] = np.broadcast_to(np.asarray(part, kind), which.shape).copy()
        frame["winrate_key"] = which
        frame["winrate_pair"] = self.pair[rows][which]
        if self.strata is not None:
            frame["winrate_stratum"] = self.strata[rows][which]
            frame["winrate_n"] = self.stratum_total[self.strata[rows][which]]
        return frame


    def one_key_meat(self, found: pd.DataFrame) -> GroupMeat:
        """The :class:`GroupMeat` of the clusters whose rows are all of one fitted key k,
        from ``found`` (:meth:`_TermSql.one_key`: per key ``i`` its such clusters ``j``
        and, over them, ``x1 = sum W_g^2``, ``x2 = sum W2_g^2``, ``x3 = sum W_g^4``,
        ``x4 = max W_g^2``, ``x5 = sum W2_g``, with ``W_g`` and ``W2_g`` the sums of the
        cluster's weights and squared weights). Such a cluster's totals are ``t_g = W_g
        v_k`` and its squared rows ``s_g = W2_g v_k^2`` (``v_k`` the key's stored entries,
        :meth:`table`), so ``meat = sum_k x1_k v_k v_k^T``, row squares ``sum_k x5_k
        v_k^2``, spread ``sum_k x2_k v_k^4``, fourth powers ``sum_k x3_k v_k^4`` and the
        largest squared total ``max_k x4_k v_k^2``; its clusters with entries are those
        of keys with entries. Exact: the sums of :meth:`_TermSql.sums` regrouped."""
        rows = self.key_rows[self.key_rows >= 0]
        entries = _entries(self.influence, rows)
        key, col = entries.row, entries.col
        v = entries.data / self.frequency[rows][key]
        per_key = np.zeros((6, rows.size))
        at = found["i"].to_numpy(np.int64)
        for i, column in enumerate(("j", "x1", "x2", "x3", "x4", "x5")):
            per_key[i, at] = found[column].to_numpy(float)
        clusters, squares, spread, fourth, top, row_squares = per_key
        q = self.n_columns
        weighted = sp.csr_array((v * squares[key], (key, col)), shape=(rows.size, q))
        meat = (weighted.T @ sp.csr_array((v, (key, col)), shape=(rows.size, q))).toarray()
        v2 = v * v
        largest = np.zeros(q)
        np.maximum.at(largest, col, top[key] * v2)
        with_entries = np.bincount(key, minlength=rows.size) > 0
        return GroupMeat(meat, int(clusters[with_entries].sum()), largest,
                         np.full(q, -1, np.int64),
                         np.bincount(col, row_squares[key] * v2, minlength=q),
                         np.bincount(col, spread[key] * v2 * v2, minlength=q),
                         np.bincount(col, fourth[key] * v2 * v2, minlength=q))


def _plain(values: np.ndarray) -> np.ndarray:
    """Raw key values as plain numpy (a categorical's values, not its codes)."""
    return np.asarray(pd.Series(values).astype(object) if isinstance(
        values.dtype, pd.CategoricalDtype) else values)


def _entries(influence, rows: np.ndarray) -> sp.coo_array:
    """The stored entries of the influence ``rows`` (a dense influence: every entry, as
    the in-memory kernels count its clusters)."""
    if sp.issparse(influence):
        return sp.coo_array(sp.csr_array(influence)[rows])
    dense = np.asarray(influence)[rows]
    row, col = np.indices(dense.shape)
    return sp.coo_array((dense.ravel(), (row.ravel(), col.ravel())), shape=dense.shape)


class EngineSums(ClusterSums):
    """:class:`~winrate.variance.cluster_sums.ClusterSums` of a key ``fit`` reduced in
    the ``scan``'s engine (module doc) for the ``clustering`` axes; ``axes`` those axes as
    the driver knows them (their sizes; the labels of the largest clusters are coded
    there: :class:`winrate.inference.scanned.ScanAxis`), ``key_axes`` the axes pass 1
    grouped by. The naive
    meat is the key log's (``naive``: the in-memory sums of the key fit, which stand for
    every row). Each correction's terms are one reduction (CR2 another); the designs come
    with the first."""

    def __init__(self, fit: KeyFit, scan: Scan, clustering: tuple[str, ...], axes: list,
                 key_axes: tuple[str, ...], bread, naive: ClusterSums, progress=None):
        super().__init__(bread, fit.n_per_model)
        self.fit, self.scan, self.clustering = fit, scan, clustering
        self.axes, self.key_axes = axes, key_axes
        self.naive, self.progress = naive, progress
        self._meats: dict[bool, list[GroupMeat]] = {}
        self._designs: list[AxisDesign] | None = None
        self._pair_iccs: dict[int, float] = {}

    @property
    def n_clusters(self) -> tuple[int, ...]:
        return tuple(axis.n_clusters for axis in self.axes)

    def naive_meat(self, correction: str) -> np.ndarray:
        return self.naive.naive_meat(correction)

    def term_meats(self, correction: str) -> list[GroupMeat]:
        cr2 = correction == "cr2"
        if cr2 not in self._meats:
            self._reduce(cr2)
        return self._meats[cr2]

    def design_sums(self, axis: int):
        raise NotImplementedError("an engine returns each axis' design moments, not its "
                                  "per-cluster sums: read design()")

    def design(self, axis: int) -> AxisDesign:
        if self._designs is None:
            self._reduce(False)
        return self._designs[axis]

    def same_pair_icc(self, axis: int) -> float | None:
        """The ANOVA ICC of the centred scores grouped by (cluster, pair) cells of
        ``axis`` (:func:`winrate.inference.covariance._same_pair_icc`'s, from sums the
        engine reduced): reduced with the designs where the axis has single-cluster pairs,
        the only ones that read it; None elsewhere."""
        self.design(axis)
        return self._pair_iccs.get(axis)

    def _reduce(self, cr2: bool) -> None:
        """One reduction in the engine: every term's meat (and, the first time, every
        axis' design) from the uploaded key table, dropped at the end; a term whose
        grouping would outgrow the engine's memory in slices of its clusters
        (:meth:`_plan`), whose sums add."""
        scan, fit = self.scan, self.fit
        covered = fit.model_columns_are_entries()
        sql = _TermSql(fit.n_columns, fit.n_per_model.shape[0],
                       0 if covered else fit.n_columns, cr2)
        key_columns = scan.key_columns(self.key_axes)
        keys = fit.table(scan.key_table(self.key_axes)[key_columns], model_rows=not covered)
        table = scan.upload(keys)
        try:
            def rows(dims, within=None):
                return "(" + scan.rows_joined({d: self.clustering[d] for d in dims}, table,
                                              key_columns, within,
                                              self._grouped(dims)) + ")"

            spans = None
            if self._designs is None:
                spans = self._single_pairs(sql, rows(tuple(range(len(self.clustering)))))
            parts: dict[tuple[int, ...], _TermPart] = {}
            for dims, within in _progress(self._plan(sql, len(keys)), self.progress):
                part = self._term(sql, rows(dims, within), dims, spans)
                parts[dims] = parts[dims].merged(part) if dims in parts else part
        finally:
            scan.drop(table)
        self._meats[cr2] = [part.meat for part in parts.values()]
        for dims, part in parts.items():
            if len(dims) == 1:  # as in memory: the fit's rows must span two clusters
                require_two_clusters(part.meat.n_groups, f"groups[{dims[0]}]")
        if spans is not None:
            self._designs = [self._axis_design(dims[0], part, spans[dims[0]])
                             for dims, part in parts.items() if len(dims) == 1]

    def _plan(self, sql: _TermSql, n_table_rows: int) -> list[tuple[tuple[int, ...], str | None]]:
        """Each term with the slices of its clusters it is reduced in: one where its
        grouping fits half the engine's memory at :data:`GROUP_BYTES` a group, else
        ranges of its axis of most clusters (:meth:`winrate.io.scan.Scan.cluster_slices`;
        at most as many as that axis has clusters).
        A term's groups are at most its joined rows (the source's rows times the key
        table's rows per key) and at most its clusters times the influence columns
        (and model rows) a cluster can touch."""
        scan = self.scan
        joined = scan.n_rows * n_table_rows / max(int((self.fit.key_rows >= 0).sum()), 1)
        width = sql.q + (sql.n_models if sql.model_base else 0) + 1
        limit = engine_memory(scan.budget) / 2
        plan = []
        for dims in subsets(len(self.clustering)):
            clusters = min(float(np.prod([self.axes[d].n_clusters for d in dims])),
                           scan.n_rows)
            groups = min(joined, clusters * width)
            widest = max(dims, key=lambda d: self.axes[d].n_clusters)
            n_slices = int(min(np.ceil(groups * GROUP_BYTES / limit),
                               self.axes[widest].n_clusters))
            if n_slices <= 1:
                plan.append((dims, None))
                continue
            plan += [(dims, within) for within in
                     scan.cluster_slices(self.clustering[widest], n_slices)]
        return plan

    def _grouped(self, dims: tuple[int, ...]) -> bool:
        """Whether the rows of a term are summed per (cluster, key) before the join
        (:meth:`winrate.io.scan.Scan.rows_joined`): where its clusters times the keys
        are at most half the rows (a judge axis of a long log)."""
        clusters = float(np.prod([self.axes[d].n_clusters for d in dims]))
        return clusters * self.fit.key_rows.shape[0] <= self.scan.n_rows / 2

    def _term(self, sql: _TermSql, rows: str, dims: tuple[int, ...],
              spans: list[np.ndarray] | None) -> _TermPart:
        """A term's :class:`_TermPart` over the clusters of ``rows``: its meat from its
        cluster sums, kept in the engine while read (CR2: with its clusters' masses), and
        for an axis where ``spans`` (each axis' single-cluster pairs) are given the
        moments of its design."""
        scan, created = self.scan, []
        try:
            if len(dims) > 1 and not sql.cr2:
                return _TermPart(self._split_meat(sql, rows, dims, created))
            mass = None
            if sql.cr2:
                mass = scan.materialize(sql.mass(rows, dims))
                created.append(mass)
            sums = scan.materialize(sql.sums(rows, dims, mass))
            created.append(sums)
            meat, parts = self._group_meat(sql, sums, dims)
            if len(dims) > 1 or spans is None:
                return _TermPart(meat)
            per_model = np.zeros(self.fit.n_per_model.shape[0], np.int64)
            per_model[parts["model"]["i"]] = parts["model"]["j"]
            found = parts["clusters"]
            moments = np.array([found[c][0] for c in ("j", "x1", "x2", "x3")], float)
            pairs = (self._pair_moments(sql, rows, dims[0]) if spans[dims[0]].any()
                     else None)
            return _TermPart(meat, per_model, moments, pairs)
        finally:
            for name in reversed(created):
                scan.drop(name)

    def _split_meat(self, sql: _TermSql, rows: str, dims: tuple[int, ...],
                    created: list[str]) -> GroupMeat:
        """A term of several axes without CR2 in two parts: its clusters whose rows are
        all of one key reduced per key (:meth:`KeyFit.one_key_meat`), and only the other
        clusters grouped by (cluster, idx) and joined with themselves. The clusters of
        an intersection are mostly single rows (a prompt x judge cell): the per-cluster
        totals and the self-join, which grow with the rows, shrink to those of the cells
        holding several keys (the tables are added to ``created``)."""
        scan = self.scan
        cells = scan.materialize(sql.cells(rows, dims))
        created.append(cells)
        one_key = self.fit.one_key_meat(scan.query_frame(sql.one_key(cells)))
        sums = scan.materialize(sql.sums(rows, dims, mixed=cells))
        created.append(sums)
        return self._group_meat(sql, sums, dims)[0].merged(one_key)

    def _single_pairs(self, sql: _TermSql, rows: str) -> list[np.ndarray]:
        """Per clustering axis, the pairs whose rows lie in one cluster (one query: the
        least and largest label of each pair's rows); a pair without rows counts as one."""
        found = self.scan.query_frame(sql.pair_spans(rows, len(self.clustering)))
        pairs = found["i"].to_numpy(np.int64)
        spans = []
        for d in range(len(self.clustering)):
            single = np.ones(self.fit.n_pairs, bool)
            single[pairs] = found[f"single{d}"].to_numpy() == 1
            spans.append(single)
        return spans

    def _group_meat(self, sql: _TermSql, sums: str,
                    dims: tuple[int, ...]) -> tuple[GroupMeat, dict]:
        """The term's :class:`GroupMeat` from its cluster sums in the engine, and the rest
        of what one query (:meth:`_TermSql.term`) returns (its clusters' moments; for an
        axis each model's clusters)."""
        q = sql.q
        parts = _parts(self.scan.query_table(sql.term(sums, dims)))
        half = parts["meat"]
        meat = np.zeros((q, q))
        meat[half["i"], half["j"]] = half["x1"]
        meat = meat + meat.T - np.diag(np.diag(meat))
        stats = parts["stats"]
        found = [np.zeros(q) for _ in range(4)]  # row squares, spread, fourth, largest
        for values, column in zip(found, ("x1", "x2", "x3", "x4"), strict=True):
            values[stats["i"]] = stats[column]
        row_squares, spread, fourth, largest = found
        argmax = np.full(q, -1, np.int64)
        if len(dims) == 1:
            top = parts["largest"]
            argmax[top["i"]] = self.axes[dims[0]].code(self.scan.read_labels(top["label"]))
            argmax[largest <= 0] = -1
        return GroupMeat(meat, int(parts["clusters"]["i"][0]), largest, argmax, row_squares,
                         spread, fourth), parts

    def _pair_moments(self, sql: _TermSql, rows: str, dim: int) -> np.ndarray:
        """The ANOVA moments over the (cluster, pair) cells of axis ``dim`` in ``rows``
        (:meth:`_TermSql.pair_cells`: cells, total size, squared sizes, ``sum S^2 / n``)."""
        found = self.scan.query_frame(sql.pair_cells(rows, dim))
        return found[["i", "x1", "x2", "x3"]].to_numpy(float)[0]

    def _axis_design(self, dim: int, part: _TermPart, single: np.ndarray) -> AxisDesign:
        """An axis' ``m`` and ICC from its term's summed ``part`` and its ``single``
        pairs; where it has such pairs, its (cluster, pair) cells' ICC
        (:meth:`same_pair_icc`)."""
        fit = self.fit
        n_all, total, squares, between = part.moments
        _check_unchanged(total, float(fit.frequency.sum()))
        if part.pair_moments is not None:
            self._pair_iccs[dim] = diagnostics.icc_of_moments(int(part.pair_moments[0]),
                                                              *part.pair_moments[1:],
                                                              fit.squares)
        icc = diagnostics.icc_of_moments(int(n_all), total, squares, between, fit.squares)
        return AxisDesign(diagnostics.per_cluster(fit.n_per_model, part.per_model),
                          single, icc)


@dataclass(frozen=True)
class _TermPart:
    """What a term's clusters in one slice give (:meth:`EngineSums._term`); over disjoint
    slices every piece adds (the largest total: the larger, the earlier slice's on ties,
    as ranges of labels keep the least). ``per_model``: the clusters each model appears
    in; ``moments``: the number of clusters, their total and squared sizes and ``sum_g
    S_g^2 / n_g``; ``pair_moments``: the same over (cluster, pair) cells (axes only)."""

    meat: GroupMeat
    per_model: np.ndarray | None = None
    moments: np.ndarray | None = None
    pair_moments: np.ndarray | None = None

    def merged(self, other: _TermPart) -> _TermPart:
        def added(x, y):
            return None if x is None else x + y
        return _TermPart(self.meat.merged(other.meat),
                         added(self.per_model, other.per_model),
                         added(self.moments, other.moments),
                         added(self.pair_moments, other.pair_moments))


def _parts(table) -> dict[str, dict]:
    """A union of differently shaped results (an Arrow table whose column ``kind`` names
    each) as arrays per kind; a kind's ``label`` as a pandas Series of its own rows (an
    integer label stays an integer: the other kinds' NULLs are not in it); a kind without
    rows reads as empty arrays."""
    import pyarrow.compute as pc

    def arrays(part):
        found = {"i": np.asarray(part["i"].to_numpy(zero_copy_only=False), np.int64),
                 "j": np.asarray(part["j"].to_numpy(zero_copy_only=False), np.int64),
                 "label": part["label"].to_pandas() if "label" in part.column_names
                 else None}
        for column in ("x1", "x2", "x3", "x4"):
            found[column] = np.asarray(
                part[column].to_numpy(zero_copy_only=False), float)
        return found

    found = {kind: arrays(table.filter(pc.equal(table["kind"], kind)))
             for kind in pc.unique(table["kind"]).to_pylist()}
    return defaultdict(lambda: arrays(table.slice(0, 0)), found)


def _check_unchanged(joined: float, fitted: float) -> None:
    """The rows pass 2 joined to the keys weigh what the fit's keys weigh; else the source
    changed between the passes (its rows of keys pass 1 did not see drop out of the join)."""
    if abs(joined - fitted) > 1e-9 * fitted:
        raise WinrateInputError(
            f"the rows of the second pass weigh {joined:,.6g} where the first pass's keys "
            f"weigh {fitted:,.6g}: the source changed between the passes (it must not "
            "change during a scan)")


def _progress(items, progress):
    return items if progress is None else progress(items)


#: Bytes a group of pass 2's grouped SQL is counted at when a term's slices are planned
#: (:meth:`EngineSums._plan`): its cluster and column, four sums and the hash table's slot,
#: with room for the engine's overhead.
GROUP_BYTES = 100

#: A missing number in a union's padding column.
_NO = "CAST(NULL AS DOUBLE)"


@dataclass(frozen=True)
class _TermSql:
    """The SQL of the reduction (module doc) over the rows joined to the uploaded key
    table (:meth:`KeyFit.table`): ``q`` influence columns, ``n_models`` models whose
    presence rows start at ``model_base`` (0: the entries themselves), ``cr2`` scales
    each entry by its leverage factor. Plain SELECT / JOIN / GROUP BY with SUM, COUNT,
    MIN, MAX, CASE and SQRT: the same text on DuckDB and Spark SQL."""

    q: int
    n_models: int
    model_base: int
    cr2: bool

    @staticmethod
    def _clusters(dims: tuple[int, ...], alias: str = "") -> list[str]:
        prefix = f"{alias}." if alias else ""
        return [f"{prefix}winrate_c{d}" for d in dims]

    def _same_cluster(self, dims, left: str, right: str) -> str:
        return " AND ".join(f"{a} = {b}" for a, b in zip(self._clusters(dims, left),
                                                         self._clusters(dims, right),
                                                         strict=True))

    def _entry(self, alias: str = "") -> str:
        """The condition of an influence entry's row (module doc)."""
        idx = f"{alias}.winrate_idx" if alias else "winrate_idx"
        return f"{idx} >= 0 AND {idx} < {self.q}"

    def mass(self, rows: str, dims: tuple[int, ...]) -> str:
        """CR2: per cluster and stratum the weight ``m_gh`` of the cluster's rows."""
        clusters = ", ".join(self._clusters(dims, "r"))
        return (f"SELECT {clusters}, r.winrate_stratum AS winrate_stratum, "
                f"SUM(r.winrate_w) AS winrate_m FROM {rows} AS r WHERE r.winrate_u = 1 "
                f"GROUP BY {clusters}, r.winrate_stratum")

    def sums(self, rows: str, dims: tuple[int, ...], mass: str | None = None,
             mixed: str | None = None) -> str:
        """Per (cluster, idx) of the joined ``rows``: ``winrate_t = sum v w``,
        ``winrate_s = sum v2 w^2`` (an entry's total and sum of squared rows, CR2-scaled
        by the cluster's ``mass``), and for an axis the cluster's size ``winrate_n = sum u
        w`` and sum of centred scores ``winrate_d = sum d w`` spread over its rows. A term
        of several axes reads the entries only; with ``mixed`` (:meth:`cells`) only those
        of its clusters holding several keys."""
        clusters = ", ".join(self._clusters(dims, "r"))
        source, factor = f"{rows} AS r", "1"
        if mixed is not None:
            source += (f" JOIN (SELECT {', '.join(self._clusters(dims))} FROM {mixed} "
                       "WHERE winrate_kmin < winrate_kmax) AS x ON "
                       f"{self._same_cluster(dims, 'r', 'x')}")
        if mass is not None:
            rest = "(1 - f.winrate_m / r.winrate_n)"
            factor = f"(CASE WHEN {rest} > 1e-12 THEN 1 / SQRT({rest}) ELSE 1 END)"
            source += (f" JOIN {mass} AS f ON {self._same_cluster(dims, 'r', 'f')} AND "
                       "f.winrate_stratum = r.winrate_stratum")
        axis = len(dims) == 1
        where = "" if axis else f" WHERE r.winrate_idx >= 0 AND r.winrate_idx < {self.q}"
        sizes = (", SUM(r.winrate_u * r.winrate_w) AS winrate_n, SUM(r.winrate_d * "
                 "r.winrate_w) AS winrate_d" if axis else "")
        return (f"SELECT {clusters}, r.winrate_idx AS winrate_idx, "
                f"SUM(r.winrate_v * r.winrate_w * {factor}) AS winrate_t, "
                f"SUM(r.winrate_v2 * r.winrate_w2 * {factor} * {factor}) "
                f"AS winrate_s{sizes} FROM {source}{where} GROUP BY {clusters}, "
                "r.winrate_idx")

    def term(self, sums: str, dims) -> str:
        """The term's numbers as one union (columns kind, i, j, x1..x4, label): ``meat``
        rows (i <= j, ``sum_g t_gi t_gj``), ``stats`` per column i (row squares, spread,
        fourth powers, largest squared total) and ``clusters`` (:meth:`clusters`); for an
        axis also ``largest`` (per column i the label of the cluster of the largest
        squared total, the least on ties) and ``model`` (per model i the clusters j it
        appears in: its presence rows)."""
        t2 = "winrate_t * winrate_t"
        nothing = f"{_NO} AS x1, {_NO} AS x2, {_NO} AS x3, {_NO} AS x4"
        parts = [
            f"SELECT 'meat' AS kind, a.winrate_idx AS i, b.winrate_idx AS j, "
            f"SUM(a.winrate_t * b.winrate_t) AS x1, {_NO} AS x2, {_NO} AS x3, {_NO} AS x4, "
            f"NULL AS label FROM {sums} AS a JOIN {sums} AS b ON "
            f"{self._same_cluster(dims, 'a', 'b')} AND a.winrate_idx <= b.winrate_idx "
            f"WHERE a.winrate_idx >= 0 AND b.winrate_idx < {self.q} "
            "GROUP BY a.winrate_idx, b.winrate_idx",
            f"SELECT 'stats' AS kind, winrate_idx AS i, -1 AS j, SUM(winrate_s) AS x1, "
            f"SUM(winrate_s * winrate_s) AS x2, SUM(({t2}) * ({t2})) AS x3, MAX({t2}) AS x4, "
            f"NULL AS label FROM {sums} WHERE {self._entry()} GROUP BY winrate_idx",
            self.clusters(sums, dims)]
        if len(dims) == 1:
            base = self.model_base
            parts += [
                f"SELECT 'largest' AS kind, g.winrate_idx AS i, -1 AS j, {nothing}, "
                f"MIN(g.winrate_c{dims[0]}) AS label FROM {sums} AS g JOIN (SELECT "
                f"winrate_idx, MAX({t2}) AS winrate_top FROM {sums} WHERE {self._entry()} "
                "GROUP BY winrate_idx) AS m ON g.winrate_idx = m.winrate_idx WHERE "
                "g.winrate_t * g.winrate_t = m.winrate_top GROUP BY g.winrate_idx",
                f"SELECT 'model' AS kind, winrate_idx - {base} AS i, COUNT(*) AS j, "
                f"{nothing}, NULL AS label FROM {sums} WHERE winrate_idx >= {base} AND "
                f"winrate_idx < {base + self.n_models} GROUP BY winrate_idx"]
        return " UNION ALL ".join(parts)

    def clusters(self, sums: str, dims) -> str:
        """The term's ``clusters`` row: i the clusters with entries; for an axis also j
        all its clusters, x1 their total size, x2 the sum of squared sizes and x3 ``sum_g
        S_g^2 / n_g`` (the ANOVA ICC's moments; S_g the cluster's sum of centred
        scores)."""
        clusters = ", ".join(self._clusters(dims))
        if len(dims) > 1:
            return (f"SELECT 'clusters' AS kind, COUNT(*) AS i, -1 AS j, {_NO} AS x1, "
                    f"{_NO} AS x2, {_NO} AS x3, {_NO} AS x4, NULL AS label FROM (SELECT "
                    f"{clusters} FROM {sums} GROUP BY {clusters}) AS g")
        return ("SELECT 'clusters' AS kind, COALESCE(SUM(winrate_e), 0) AS i, COUNT(*) AS j, "
                "COALESCE(SUM(winrate_n), 0) AS x1, COALESCE(SUM(winrate_n * winrate_n), 0) "
                "AS x2, COALESCE(SUM(winrate_d * winrate_d / winrate_n), 0) AS x3, "
                f"{_NO} AS x4, NULL AS label "
                f"FROM (SELECT {clusters}, SUM(winrate_n) AS winrate_n, SUM(winrate_d) AS "
                f"winrate_d, MAX(CASE WHEN {self._entry()} THEN 1 ELSE 0 END) AS winrate_e "
                f"FROM {sums} GROUP BY {clusters}) AS g")

    def cells(self, rows: str, dims: tuple[int, ...]) -> str:
        """Per cluster of the term: its least and largest key (``winrate_kmin``,
        ``winrate_kmax``), and the sums of its rows' weights ``W`` (``winrate_sw``) and
        squared weights ``W2`` (``winrate_sw2``); one joined row per source row (its key's
        ``u = 1`` row)."""
        clusters = ", ".join(self._clusters(dims, "r"))
        return (f"SELECT {clusters}, MIN(r.winrate_key) AS winrate_kmin, "
                "MAX(r.winrate_key) AS winrate_kmax, SUM(r.winrate_w) AS winrate_sw, "
                f"SUM(r.winrate_w2) AS winrate_sw2 FROM {rows} AS r "
                f"WHERE r.winrate_u = 1 GROUP BY {clusters}")

    @staticmethod
    def one_key(cells: str) -> str:
        """Per key i, over the :meth:`cells` whose rows are all of it: their number j and
        the sums :meth:`KeyFit.one_key_meat` reads (x1 ``sum W^2``, x2 ``sum W2^2``, x3
        ``sum W^4``, x4 ``max W^2``, x5 ``sum W2``)."""
        w2 = "winrate_sw * winrate_sw"
        return (f"SELECT winrate_kmin AS i, COUNT(*) AS j, SUM({w2}) AS x1, "
                f"SUM(winrate_sw2 * winrate_sw2) AS x2, SUM(({w2}) * ({w2})) AS x3, "
                f"MAX({w2}) AS x4, SUM(winrate_sw2) AS x5 FROM {cells} "
                "WHERE winrate_kmin = winrate_kmax GROUP BY winrate_kmin")

    @staticmethod
    def pair_cells(rows: str, dim: int) -> str:
        """The ANOVA ICC's moments over (cluster, pair) cells of axis ``dim`` (columns
        i: cells, x1 total size, x2 sum of squared sizes, x3 ``sum_c S_c^2 / n_c``): the
        key rows' centred scores summed by cell."""
        return ("SELECT COUNT(*) AS i, COALESCE(SUM(winrate_n), 0) AS x1, "
                "COALESCE(SUM(winrate_n * winrate_n), 0) AS x2, "
                "COALESCE(SUM(winrate_s * winrate_s / winrate_n), 0) AS x3 FROM (SELECT "
                "SUM(r.winrate_w) AS winrate_n, SUM(r.winrate_d * r.winrate_w) AS winrate_s "
                f"FROM {rows} AS r WHERE r.winrate_u = 1 GROUP BY r.winrate_c{dim}, "
                "r.winrate_pair) AS c")

    @staticmethod
    def pair_spans(rows: str, n_axes: int) -> str:
        """Per pair i, whether its rows lie in one cluster of each axis d (``single{d}``:
        1 when the least and the largest label agree)."""
        single = ", ".join(f"CASE WHEN MIN(r.winrate_c{d}) = MAX(r.winrate_c{d}) THEN 1 "
                           f"ELSE 0 END AS single{d}" for d in range(n_axes))
        return (f"SELECT r.winrate_pair AS i, {single} FROM {rows} AS r "
                "WHERE r.winrate_u = 1 GROUP BY r.winrate_pair")
