/* SPDX-License-Identifier: MIT */
#ifndef CZ_METRICS_H
#define CZ_METRICS_H

/*
 * Prometheus metrics as a node_exporter textfile (agent.metrics_textfile, e.g.
 * /var/lib/node_exporter/textfile/cpuzombie.prom), written by the agent after each periodic
 * cycle and atomically replaced through base/fileio.h's writer (unnamed temporary file, fsync,
 * linked and renamed), so the collector never scrapes half a file and a killed agent leaves no
 * "<file>.tmp" behind. Every name starts with cpuzombie_; see metrics_format() for the list.
 * manifests/prometheus/ holds the alert rules and the Grafana dashboard that use them.
 */

#include <stdio.h>

struct node_model;

/*
 * metrics_format - pure: the exposition text of @r (memcg reading, canary, bursts since
 * r->since_ms, ENA state, r->checks) to @out:
 *   cpuzombie_agent_info{version,node} 1, cpuzombie_metrics_timestamp_seconds
 *   cpuzombie_memcg_live, _dying, _dying_ratio, _dying_growth_per_hour, _percpu_bytes,
 *   _exposed, _canary_read_seconds
 *   cpuzombie_cpu_bursts{cpu}, cpuzombie_cpu_burst_seconds{cpu} (in the lookback window),
 *   cpuzombie_cpu_burst_window_seconds, cpuzombie_cpu_burst_peak_percent{cpu}
 *   cpuzombie_ena_resets_total{interface,cause} (the driver's reset counters),
 *   cpuzombie_ena_resets_window{interface},
 * cpuzombie_ena_allowance_exceeded_total{interface,counter}
 *   cpuzombie_check_status{check,condition} (0 OK, 1 problem, 2 unknown),
 *   cpuzombie_condition_true{check,condition} (1 when True)
 * Returns 0 or -EIO.
 */
int metrics_format(const struct node_model *r, FILE *out);

/*
 * metrics_write - metrics_format() into @path atomically, mode 0644 (fileio_write_atomic with
 * FILEIO_DURABLE). Returns 0 or -errno (-EINVAL for a path without a file name); on failure the
 * old file is intact and no temporary file is left.
 */
int metrics_write(const struct node_model *r, const char *path);

#endif
