// The dashboard's two tables: stock per shard of the current generation (with what earlier
// generations sold, so the sold column adds up to the sold card) and the sale's recent changes.
import { $, setText } from './dom.js';
import { causeText, fmt, fmtTime, kindText } from './format.js';

/**
 * Each current shard's stock left and units it sold, then what shards of earlier generations sold
 * (a change moves the stock into new shards, which start at 0 sold) and the sums: the sold column adds
 * up to the sold card.
 */
export function renderShards(s) {
  const tbody = $('shards').tBodies[0];
  const withMaster = s.shards.some((x) => x.master !== undefined);
  for (const el of document.querySelectorAll('.master-col')) el.hidden = !withMaster;
  // 100 % is an even share of what the generation started with, or the fullest shard if above it.
  const scale = Math.max(1, ...s.shards.map((x) => x.stock + x.sold));
  while (tbody.rows.length > s.shards.length) tbody.deleteRow(-1);
  s.shards.forEach((shard, i) => {
    const row = tbody.rows[i] ?? tbody.insertRow();
    if (row.cells.length === 0) {
      row.innerHTML =
        '<td class="index"></td><td class="key"></td><td class="bar-col"><div class="bar"><div class="fill"></div></div></td>' +
        '<td class="stock num"></td><td class="sold num"></td><td class="master master-col"></td>';
    }
    row.dataset.shard = String(shard.index);
    row.dataset.stock = String(shard.stock);
    row.dataset.sold = String(shard.sold);
    row.classList.toggle('retired', shard.retired === true);
    row.cells[0].textContent = String(shard.index);
    row.cells[1].textContent = shard.key;
    const fill = row.cells[2].firstElementChild.firstElementChild;
    fill.style.width = `${Math.min(100, (shard.stock / scale) * 100)}%`;
    fill.classList.toggle('empty', shard.stock === 0);
    row.cells[3].textContent = fmt(shard.stock);
    row.cells[4].textContent = fmt(shard.sold);
    row.cells[5].textContent = shard.master ?? '';
    row.cells[5].hidden = !withMaster;
  });
  const current = s.shards.reduce((a, x) => a + x.sold, 0);
  setText('shards-generation', String(s.generation));
  setText('earlier-sold', fmt(s.sold - current));
  setText('shards-available', fmt(s.shards.reduce((a, x) => a + x.stock, 0)));
  setText('shards-sold', fmt(s.sold));
}

/** The recent generation changes, newest first, rebuilt when a new one arrives. */
export function renderChanges(changes) {
  const tbody = $('changes').tBodies[0];
  const key = changes.map((c) => c.generation).join(',');
  if (tbody.dataset.key === key) return;
  tbody.dataset.key = key;
  if (changes.length === 0) {
    tbody.innerHTML = '<tr><td colspan="6" class="dim">no change recorded yet</td></tr>';
    return;
  }
  tbody.replaceChildren(
    ...changes.map((c) => {
      const row = document.createElement('tr');
      row.dataset.by = c.by;
      for (const [text, cls] of [
        [fmtTime(c.at), ''],
        [String(c.generation), 'num'],
        [kindText(c), ''],
        [causeText(c), c.by === 'admin' ? '' : 'service'],
        [fmt(c.shards), 'num'],
        [fmt(c.available), 'num'],
      ]) {
        const td = row.insertCell();
        td.textContent = text;
        if (cls) td.className = cls;
      }
      return row;
    }),
  );
}
