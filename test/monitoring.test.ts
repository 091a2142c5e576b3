// The monitoring files (monitoring/) against the service: every metric the Grafana dashboard and the
// alert rules query is one GET /metrics exposes, the dashboard is well-formed JSON on the provisioned
// datasource. (promtool checks the Prometheus config and rules in .ci/run; Grafana cannot run here.)
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { useService } from './support/suite.ts';

const read = (path: string) => readFileSync(new URL(`../monitoring/${path}`, import.meta.url), 'utf8');

/** PromQL words that are not metric names. */
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on', 'ignoring']);
/** Series Prometheus makes itself for every target. */
const SYNTHETIC = new Set(['up']);

/** Metric names a PromQL expression selects: identifiers that are not calls, keywords or labels. */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // strings
    .replace(/\{[^}]*\}/g, '') // label matchers
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '') // label lists
    .replace(/\[[^\]]*\]/g, ''); // ranges and subqueries
  const names: string[] = [];
  for (const m of bare.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const rest = bare.slice((m.index ?? 0) + m[0].length).trimStart();
    if (rest.startsWith('(') || KEYWORDS.has(m[0])) continue;
    names.push(m[0]);
  }
  return names;
}

/** Series names of a Prometheus text exposition, histograms and summaries with their suffixes. */
function exposed(text: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    if (!name) continue;
    names.add(name);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
    if (type === 'summary') for (const s of ['_sum', '_count']) names.add(name + s);
  }
  return names;
}

interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { uid: string };
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: { expr: string; refId: string }[];
}

describe('monitoring files', () => {
  const { svc } = useService();

  it('metricNames finds the names and only them', () => {
    assert.deepEqual(
      metricNames(
        'histogram_quantile(0.99, sum by (le) (rate(a_bucket{lock="x{y}",le!=""}[2m]))) / clamp_min(b, 1) and on (job) deriv(c[5m:30s]) > 0',
      ),
      ['a_bucket', 'b', 'c'],
    );
  });

  it('every query of the Grafana dashboard and of the alert rules uses a metric GET /metrics exposes', async () => {
    const names = exposed(await (await fetch(`${svc.url}/metrics`)).text());
    const dashboard = JSON.parse(read('grafana/dashboards/flashsale.json')) as {
      uid: string;
      panels: Panel[];
    };
    const rules = parseYaml(read('alerts.yml')) as { groups: { rules: { alert: string; expr: string }[] }[] };
    const queries = [
      ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ where: p.title, expr: t.expr }))),
      ...rules.groups.flatMap((g) => g.rules.map((r) => ({ where: `alert ${r.alert}`, expr: r.expr }))),
    ];
    assert.ok(queries.length >= 30, `only ${queries.length} queries`);
    const unknown: string[] = [];
    for (const q of queries) {
      const used = metricNames(q.expr);
      assert.ok(used.length > 0, `${q.where}: no metric in ${q.expr}`);
      for (const name of used)
        if (!names.has(name) && !SYNTHETIC.has(name)) unknown.push(`${q.where}: ${name}`);
    }
    assert.deepEqual(unknown, []);
  });

  it('the dashboard is well formed and uses the provisioned datasource', () => {
    const dashboard = JSON.parse(read('grafana/dashboards/flashsale.json')) as {
      uid: string;
      panels: Panel[];
    };
    const datasources = parseYaml(read('grafana/provisioning/datasources/prometheus.yml')) as {
      datasources: { uid: string; url: string }[];
    };
    const uid = datasources.datasources[0]?.uid;
    assert.equal(datasources.datasources[0]?.url, 'http://prometheus:9090');
    const ids = dashboard.panels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length, 'panel ids are unique');
    for (const p of dashboard.panels.filter((x) => x.type !== 'row')) {
      assert.equal(p.datasource?.uid, uid, `${p.title}: datasource`);
      assert.ok((p.targets ?? []).length > 0, `${p.title}: no query`);
      assert.ok(p.gridPos.x + p.gridPos.w <= 24, `${p.title}: wider than the grid`);
    }
    const rules = parseYaml(read('prometheus.yml')) as {
      rule_files: string[];
      scrape_configs: { job_name: string }[];
    };
    assert.deepEqual(rules.rule_files, ['alerts.yml']);
    assert.deepEqual(
      rules.scrape_configs.map((c) => c.job_name),
      ['api', 'worker'],
    );
  });
});
