"""Clustered covariance and design diagnostics reduced inside the engine: pass 2 in SQL.

A log too large for memory stays with its engine (:mod:`winrate.io.scan`). The fit is the
key log's (pass 1): key k, a row of the key table, has the influence ``U_k`` of its
``F_k`` comparisons, and a source row r of key k has ``u_r = U_k w_r / F_k`` (exact: the
estimating equations are sums of a function of the key). Python uploads two small tables
-- each key's raw values with its models, pair, centred score and CR2 stratum, and the
stored entries ``v_kj = U_kj / F_k`` of its influence -- and the engine reduces the rows
to what :func:`winrate.variance.cluster_sums.clustered` reads, in SQL that runs unchanged
on DuckDB and Spark:

* ``D`` (per term): the rows joined to the keys and grouped by (cluster, key),
  ``W_gk = sum w`` and ``W2_gk = sum w^2`` (:meth:`winrate.io.scan.Scan.rows_by_cluster`);
* ``T`` (per term): the cluster totals ``t_gj = sum_k v_kj W_gk c_gk`` and the sums of
  squared rows ``s_gj = sum_k v_kj^2 W2_gk c_gk^2``, with ``c_gk = 1`` or, for CR2, the
  leverage factor ``(1 - m_gh / n_h)^{-1/2}`` of the key's stratum h (Bell & McCaffrey
  2002), ``m_gh = sum`` of ``W_gk`` over the cluster's keys of stratum h, ``n_h`` the
  stratum's total in the key log (:func:`winrate.variance.meats.stratum_leverage_scale`);
* from ``T``: the meat ``sum_g t_g t_g^T`` as (i <= j) entries, and per column
  ``sum_g s_gj`` (row squares), ``sum_g s_gj^2`` (spread), ``sum_g t_gj^4``, the largest
  ``t_gj^2`` and its cluster (the least label on ties), and the number of clusters: the
  :class:`~winrate.variance.meats.GroupMeat` of the term;
* from each axis' ``D``: the clusters each model appears in, the clusters of each pair
  (single-cluster pairs), and the ANOVA ICC's moments -- the number of clusters, their
  total and squared sizes, and ``sum_g S_g^2 / n_g`` of the centred scores
  (:func:`winrate.variance.diagnostics.icc_of_moments`).

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
from winrate.io.scan import KEY, Scan
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

    def tables(self, raw: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The two tables the engine joins (module doc): per fitted key, its raw values
        (``raw``, pass 1's key table in key order) as ``winrate_k0, ...``, its position
        ``winrate_key``, models, pair, centred score, stratum and stratum total; and
        per stored influence entry its key, column and ``U_kj / F_k``."""
        kept = np.flatnonzero(self.key_rows >= 0)
        rows = self.key_rows[kept]
        keys = pd.DataFrame({f"winrate_k{i}": _plain(raw[c].to_numpy()[kept])
                             for i, c in enumerate(raw.columns)})
        keys[KEY] = kept
        keys["winrate_ma"], keys["winrate_mb"] = self.model_a[rows], self.model_b[rows]
        keys["winrate_pair"] = self.pair[rows]
        keys["winrate_dev"] = self.centered[rows] - self.grand_mean
        if self.strata is not None:
            keys["winrate_stratum"] = self.strata[rows]
            keys["winrate_n"] = self.stratum_total[self.strata[rows]]
        entries = _entries(self.influence, rows)
        return keys, pd.DataFrame({KEY: kept[entries.row], "winrate_col": entries.col,
                                   "winrate_v": entries.data / self.frequency[rows][
                                       entries.row]})


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

    def _reduce(self, cr2: bool) -> None:
        """One reduction in the engine: every term's meat (and, the first time, every
        axis' design) from the uploaded key tables, which are dropped at the end."""
        scan, created = self.scan, []
        try:
            keys_frame, entries_frame = self.fit.tables(scan.key_table(self.key_axes)[
                scan.key_columns(self.key_axes)])
            keys, entries = (scan.upload(keys_frame), scan.upload(entries_frame))
            created += [keys, entries]
            sql = _TermSql(keys, entries, cr2)
            meats, designs = [], []
            terms = subsets(len(self.clustering))
            for dims in _progress(terms, self.progress):
                rows = scan.rows_by_cluster({d: self.clustering[d] for d in dims}, keys,
                                            scan.key_columns(self.key_axes))
                if len(dims) == 1:  # read again by the axis' design
                    rows = scan.materialize(rows)
                    created.append(rows)
                    if self._designs is None:
                        designs.append(self._axis_design(sql, rows, dims[0]))
                else:
                    rows = f"({rows})"
                totals = scan.materialize(sql.totals(rows, dims))
                created.append(totals)
                meats.append(self._group_meat(sql, totals, dims))
                if len(dims) == 1:  # as in memory: the fit's rows must span two clusters
                    require_two_clusters(meats[-1].n_groups, f"groups[{dims[0]}]")
        finally:
            for name in reversed(created):
                scan.drop(name)
        self._meats[cr2] = meats
        if self._designs is None:
            self._designs = designs

    def _group_meat(self, sql: _TermSql, totals: str, dims: tuple[int, ...]) -> GroupMeat:
        """The term's :class:`GroupMeat` from its cluster totals in the engine: one query
        for the numbers (:meth:`_TermSql.term`), one for the largest clusters' labels."""
        q = self.fit.influence.shape[1]
        parts = _parts(self.scan.query_frame(sql.term(totals, dims)))
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
            top = self.scan.query_frame(sql.largest(totals, dims[0]))
            labels = self.scan.read_labels(top["label"])
            argmax[top["col"].to_numpy()] = self.axes[dims[0]].code(labels)
            argmax[largest <= 0] = -1
        return GroupMeat(meat, int(parts["groups"]["i"][0]), largest, argmax, row_squares,
                         spread, fourth)

    def _axis_design(self, sql: _TermSql, rows: str, dim: int) -> AxisDesign:
        """An axis' ``m``, single-cluster pairs and ICC from its rows ``D`` in the engine
        (one query, :meth:`_TermSql.design`)."""
        fit = self.fit
        parts = _parts(self.scan.query_frame(sql.design(rows, dim)))
        clusters_of_model = np.zeros(fit.n_per_model.shape[0], np.int64)
        clusters_of_model[parts["model"]["i"]] = parts["model"]["j"]
        single = np.ones(fit.n_pairs, bool)
        single[parts["pair"]["i"]] = parts["pair"]["j"] == 1
        moments = parts["moments"]
        _check_unchanged(float(moments["x1"][0]), float(fit.frequency.sum()))
        icc = diagnostics.icc_of_moments(int(moments["i"][0]), float(moments["x1"][0]),
                                         float(moments["x2"][0]), float(moments["x3"][0]),
                                         fit.squares)
        return AxisDesign(diagnostics.per_cluster(fit.n_per_model, clusters_of_model),
                          single, icc)


def _parts(frame: pd.DataFrame) -> dict[str, dict[str, np.ndarray]]:
    """A union of differently shaped results (column ``kind`` names each) as arrays; a
    kind without rows reads as empty arrays."""
    def arrays(part):
        return {"i": part["i"].to_numpy(np.int64), "j": part["j"].to_numpy(np.int64),
                **{c: part[c].to_numpy(float) for c in ("x1", "x2", "x3", "x4")}}

    found = {kind: arrays(part) for kind, part in frame.groupby("kind")}
    return defaultdict(lambda: arrays(frame.iloc[:0]), found)


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


#: A missing number in a union's padding column.
_NO = "CAST(NULL AS DOUBLE)"


@dataclass(frozen=True)
class _TermSql:
    """The SQL of the reduction (module doc) over the uploaded ``keys`` and ``entries``;
    ``cr2`` scales each (cluster, key) by its leverage factor. Plain SELECT / JOIN /
    GROUP BY with SUM, COUNT, MAX, CASE, SQRT and ROW_NUMBER: the same text on DuckDB and
    Spark SQL (a ``/*+ BROADCAST */`` hint is a comment to DuckDB)."""

    keys: str
    entries: str
    cr2: bool

    @staticmethod
    def _clusters(dims: tuple[int, ...], alias: str = "") -> list[str]:
        prefix = f"{alias}." if alias else ""
        return [f"{prefix}winrate_c{d}" for d in dims]

    def _same_cluster(self, dims, left: str, right: str) -> str:
        return " AND ".join(f"{a} = {b}" for a, b in zip(self._clusters(dims, left),
                                                         self._clusters(dims, right),
                                                         strict=True))

    def _keyed(self, rows: str) -> str:
        return f"{rows} AS d JOIN {self.keys} AS k ON d.{KEY} = k.{KEY}"

    def totals(self, rows: str, dims: tuple[int, ...]) -> str:
        """Per (cluster, column): ``winrate_t`` the cluster's total, ``winrate_s`` its
        sum of squared rows, CR2-scaled when asked."""
        clusters = ", ".join(self._clusters(dims, "d"))
        source, factor = f"{rows} AS d", "1"
        if self.cr2:
            mass = (f"SELECT {clusters}, k.winrate_stratum AS winrate_stratum, "
                    f"SUM(d.winrate_w1) AS winrate_m, MIN(k.winrate_n) AS winrate_n FROM "
                    f"{self._keyed(rows)} GROUP BY {clusters}, k.winrate_stratum")
            rest = "(1 - f.winrate_m / f.winrate_n)"
            factor = f"(CASE WHEN {rest} > 1e-12 THEN 1 / SQRT({rest}) ELSE 1 END)"
            source = (f"{self._keyed(rows)} JOIN ({mass}) AS f ON "
                      f"{self._same_cluster(dims, 'd', 'f')} AND "
                      "f.winrate_stratum = k.winrate_stratum")
        return (f"SELECT /*+ BROADCAST(e) */ {clusters}, e.winrate_col AS winrate_col, "
                f"SUM(e.winrate_v * d.winrate_w1 * {factor}) AS winrate_t, "
                f"SUM(e.winrate_v * e.winrate_v * d.winrate_w2 * {factor} * {factor}) "
                f"AS winrate_s FROM {source} JOIN {self.entries} AS e "
                f"ON d.{KEY} = e.{KEY} GROUP BY {clusters}, e.winrate_col")

    def term(self, totals: str, dims) -> str:
        """The term's numbers as one union (columns kind, i, j, x1..x4): ``meat`` rows
        (i <= j, ``sum_g t_gi t_gj``), ``stats`` per column i (row squares, spread, fourth
        powers, largest squared total) and ``groups`` (i: the number of clusters)."""
        t2 = "winrate_t * winrate_t"
        return (f"SELECT 'meat' AS kind, a.winrate_col AS i, b.winrate_col AS j, "
                f"SUM(a.winrate_t * b.winrate_t) AS x1, {_NO} AS x2, {_NO} AS x3, {_NO} AS x4 "
                f"FROM {totals} AS a JOIN {totals} AS b ON "
                f"{self._same_cluster(dims, 'a', 'b')} AND a.winrate_col <= b.winrate_col "
                "GROUP BY a.winrate_col, b.winrate_col "
                f"UNION ALL SELECT 'stats' AS kind, winrate_col AS i, -1 AS j, "
                f"SUM(winrate_s) AS x1, SUM(winrate_s * winrate_s) AS x2, "
                f"SUM(({t2}) * ({t2})) AS x3, MAX({t2}) AS x4 FROM {totals} "
                "GROUP BY winrate_col "
                f"UNION ALL SELECT 'groups' AS kind, COUNT(*) AS i, -1 AS j, {_NO} AS x1, "
                f"{_NO} AS x2, {_NO} AS x3, {_NO} AS x4 FROM (SELECT DISTINCT "
                f"{', '.join(self._clusters(dims))} FROM {totals}) AS g")

    @staticmethod
    def largest(totals: str, dim: int) -> str:
        """Per column the cluster of the largest squared total (the least label on ties)."""
        return (f"SELECT col, label FROM (SELECT winrate_col AS col, winrate_c{dim} AS "
                f"label, ROW_NUMBER() OVER (PARTITION BY winrate_col ORDER BY winrate_t * "
                f"winrate_t DESC, winrate_c{dim}) AS winrate_rank FROM {totals}) AS x "
                "WHERE winrate_rank = 1")

    def design(self, rows: str, dim: int) -> str:
        """An axis' design as one union (columns kind, i, j, x1..x4): per model i the
        clusters j it appears in (``model``), per pair i its clusters j (``pair``), and
        the ANOVA ICC's moments (``moments``: i clusters, x1 total size, x2 sum of
        squared sizes, x3 ``sum_g S_g^2 / n_g``)."""
        cluster = f"d.winrate_c{dim}"
        nothing = f"{_NO} AS x1, {_NO} AS x2, {_NO} AS x3, {_NO} AS x4"
        return (f"SELECT 'model' AS kind, m AS i, COUNT(*) AS j, {nothing} FROM ("
                f"SELECT {cluster} AS c, k.winrate_ma AS m FROM {self._keyed(rows)} UNION "
                f"SELECT {cluster} AS c, k.winrate_mb AS m FROM {self._keyed(rows)}) AS x "
                "GROUP BY m "
                f"UNION ALL SELECT 'pair' AS kind, k.winrate_pair AS i, "
                f"COUNT(DISTINCT {cluster}) AS j, {nothing} FROM {self._keyed(rows)} "
                "GROUP BY k.winrate_pair "
                "UNION ALL SELECT 'moments' AS kind, COUNT(*) AS i, -1 AS j, "
                "SUM(winrate_size) AS x1, SUM(winrate_size * winrate_size) AS x2, "
                f"SUM(winrate_sum * winrate_sum / winrate_size) AS x3, {_NO} AS x4 FROM ("
                f"SELECT {cluster}, SUM(d.winrate_w1) AS winrate_size, "
                "SUM(d.winrate_w1 * k.winrate_dev) AS winrate_sum FROM "
                f"{self._keyed(rows)} GROUP BY {cluster}) AS g")
