// Admission metrics: the adaptive limit, orders in flight and queued of this process's order admission
// (read on scrape from the state the runtime hands over), and the orders it refused 429.

import { Counter, Gauge, type Registry } from 'prom-client';

/** What the admission gauges show of one process's order admission (src/http/admission.ts). */
export interface AdmissionState {
  limit: number;
  inflight: number;
  queued: number;
}

const GAUGES = [
  ['limit', 'Admission control: the adaptive limit of orders in flight in this process'],
  ['inflight', 'Admission control: orders admitted and not yet answered'],
  ['queued', 'Admission control: orders waiting for a slot'],
] as const;

export function admissionMetrics(registry: Registry) {
  let admission: (() => AdmissionState) | undefined;
  for (const [field, help] of GAUGES) {
    new Gauge({
      name: `flashsale_admission_${field}`,
      help,
      registers: [registry],
      collect() {
        if (admission) this.set(admission()[field]);
      },
    });
  }
  return {
    admissionShed: new Counter({
      name: 'flashsale_admission_shed_total',
      help: 'Orders refused 429 busy by admission control, by reason (queue_full, queue_timeout, loop_lag)',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    rateLimited: new Counter({
      name: 'flashsale_rate_limited_total',
      help: 'Orders refused 429 rate_limited, by the limit that refused them (user, address)',
      labelNames: ['by'] as const,
      registers: [registry],
    }),
    /** The admission control whose state the flashsale_admission_* gauges report. */
    watchAdmission(state: () => AdmissionState): void {
      admission = state;
    },
  };
}
