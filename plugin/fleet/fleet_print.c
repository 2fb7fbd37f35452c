/* SPDX-License-Identifier: MIT */
/* The fleet summary as text, most telling first: see fleet.h. */
#include <string.h>

#include "base/kjson.h"
#include "fleet/fleet_model.h"
#include "remediator/remediate_plan.h"
#include "base/util.h"

#define WRAP 100
#define SCORE_MIN 0.1	/* below this a dimension shows no pattern (chance does that) */

/* @s with every byte outside printable ASCII as '?', quoted when it holds a space or is "". */
static const char *safe_q(const char *s, bool quote, char *buf, size_t size)
{
	size_t o = 0;

	if (size < 4)
		return "";
	if (quote)
		buf[o++] = '"';
	for (; *s && o + 2 < size; s++)
		buf[o++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
	if (quote)
		buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

static const char *safe(const char *s, char *buf, size_t size)
{
	return safe_q(s, !*s || strchr(s, ' ') != NULL, buf, size);
}

struct names_out {
	FILE *out;
	size_t col, n;
};

static void name_out(const char *name, void *userdata)
{
	struct names_out *no = userdata;
	char b[FLEET_VALUE_MAX + 4];
	size_t len;

	safe(name, b, sizeof(b));
	len = strlen(b);
	if (no->n == 0 || no->col + len + 1 > WRAP) {
		fprintf(no->out, "\n%8s", "");
		no->col = 8;
	}
	fprintf(no->out, " %s", b);
	no->col += len + 1;
	no->n++;
}

static double pct(size_t a, size_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0;
}

static void print_dim(struct fleet *f, int c, const struct fleet_cond_summary *cs,
		      const struct fleet_dim *d, bool nodes, FILE *out)
{
	const struct fleet_value *v = &d->best;
	size_t n = cs->t + cs->f, elsewhere = n - v->n;
	char b[FLEET_VALUE_MAX + 4];

	fprintf(out,
		"    %4.2f %-14s %s: %zu of the %zu True nodes; %zu/%zu of its nodes True "
		"(%.1f%%)",
		d->score, d->name, v->value[0] ? safe(v->value, b, sizeof(b)) : "(none)", v->t,
		cs->t, v->t, v->n, pct(v->t, v->n));
	if (elsewhere)
		fprintf(out, " vs %.1f%% elsewhere", pct(cs->t - v->t, elsewhere));
	else
		fprintf(out, ", every node has it");
	for (size_t i = 0; i < d->n_also; i++)
		fprintf(out, "%s %s %zu/%zu", i ? "," : "; also", d->also[i].value[0] ?
			safe(d->also[i].value, b, sizeof(b)) : "(none)", d->also[i].t,
			d->also[i].n);
	if (nodes) {
		struct names_out no = { out, 0, 0 };

		fleet_nodes_where(f, (enum fleet_cond)c, d->name, v->value, name_out, &no);
	}
	fputc('\n', out);
}

static void print_top(struct fleet *f, int c, const struct fleet_cond_summary *cs, bool nodes,
		      FILE *out)
{
	char b[FLEET_VALUE_MAX + 4];

	if (cs->n_top == 0)
		return;
	fprintf(out, "  %s:", fleet_top_kind[c]);
	for (size_t i = 0; i < cs->n_top; i++) {
		const struct fleet_count *t = &cs->top[i];

		fprintf(out, "%s%s on %zu node%s", nodes ? "\n    " : i ? "; " : " ",
			safe(t->name, b, sizeof(b)), t->nodes, t->nodes == 1 ? "" : "s");
		if (c == FLEET_MEMCG)
			fprintf(out, " (up to %" PRIu64 " restarts)", t->max);
		else if (c == FLEET_CPU && t->max)
			fprintf(out, " (up to %.1fs)", (double)t->max / 1000.0);
		else if (c == FLEET_ENA)
			fprintf(out, " (up to %" PRIu64 " resets)", t->max);
		if (nodes) {
			struct names_out no = { out, 0, 0 };

			fleet_nodes_named(f, (enum fleet_cond)c, t->name, name_out, &no);
		}
	}
	fputc('\n', out);
}

static void print_cond(struct fleet *f, int c, const struct fleet_cond_summary *cs, bool nodes,
		       FILE *out)
{
	size_t reporting = cs->t + cs->f, flat = 0;

	fprintf(out, "%s: True on %zu of %zu nodes (%.1f%%)", cs->type, cs->t, reporting,
		pct(cs->t, reporting));
	if (cs->unknown)
		fprintf(out, "; %zu Unknown", cs->unknown);
	if (cs->absent)
		fprintf(out, "; %zu nodes without it", cs->absent);
	if (cs->not_ready)
		fprintf(out, "; %zu of the True not Ready", cs->not_ready);
	fputc('\n', out);
	if (cs->t == 0)
		return;
	fprintf(out, "  where the True nodes concentrate, most telling first (score: share of the "
		"True nodes minus share of the False):\n");
	for (size_t i = 0; i < cs->n_dims; i++)
		if (cs->dims[i].score >= SCORE_MIN)
			print_dim(f, c, cs, &cs->dims[i], nodes, out);
		else
			flat++;
	if (flat) {
		fprintf(out, "    no pattern in:");
		for (size_t i = 0, k = 0; i < cs->n_dims; i++)
			if (cs->dims[i].score < SCORE_MIN)
				fprintf(out, "%s %s", k++ ? "," : "", cs->dims[i].name);
		fputc('\n', out);
	}
	print_top(f, c, cs, nodes, out);
	if (cs->first_true_ms) {
		char a[40], b[40];

		fprintf(out, "  True since (lastTransitionTime): first %s, latest %s\n",
			kube_time(cs->first_true_ms, false, a, sizeof(a)),
			kube_time(cs->last_true_ms, false, b, sizeof(b)));
	}
	if (c == FLEET_MEMCG && cs->dying_max)
		fprintf(out,
			"  dying memcgs on the True nodes: median %" PRIu64 ", max %" PRIu64
			"; ratio median x%.0f\n",
			cs->dying_median, cs->dying_max, cs->ratio_median);
	if (cs->unparsed)
		fprintf(out, "  %zu True node%s with a message not written by cpuzombie (or cut)\n",
			cs->unparsed, cs->unparsed == 1 ? "" : "s");
}

static void print_remediation(struct fleet *f, const struct fleet_summary *s, bool nodes,
			      FILE *out)
{
	struct names_out no = { out, 0, 0 };
	char b[sizeof(s->leases_denied) + 4];

	fprintf(out, "Remediation: %zu node%s held by cpuzombie (annotated %s), %zu drained; %zu "
		"unschedulable in all", s->held, s->held == 1 ? "" : "s", "cpuzombie.io/cordoned",
		s->drained, s->unschedulable);
	if (nodes || s->held <= 10)
		fleet_nodes_held(f, name_out, &no);
	fputc('\n', out);
	if (s->held_long) {
		no = (struct names_out){ out, 0, 0 };
		fprintf(out, "Held long: %zu node%s held past uncordon_after + drain_timeout "
			"with a condition still True (annotated %s)", s->held_long,
			s->held_long == 1 ? "" : "s", REMEDIATE_ANN_HELD_LONG);
		if (nodes || s->held_long <= 10)
			fleet_nodes_held_long(f, name_out, &no);
		fputc('\n', out);
	}
	if (!s->leases_known) {
		fprintf(out, "Leases: cannot read the remediation budget (%s); everything above is "
			"complete\n", safe_q(s->leases_denied, false, b, sizeof(b)));
		return;
	}
	fprintf(out, "Leases: %zu slot%s in use", s->leases_held, s->leases_held == 1 ? "" : "s");
	if (s->budget > 0)
		fprintf(out, " of %d (remediation.max_unavailable of the local config)", s->budget);
	if (s->leases_expired)
		fprintf(out, ", %zu expired", s->leases_expired);
	no = (struct names_out){ out, 0, 0 };
	fleet_lease_holders(f, name_out, &no);
	fputc('\n', out);
}

void fleet_print(struct fleet *f, const struct fleet_summary *s, bool nodes, FILE *out)
{
	fprintf(out, "cpuzombie fleet: %zu nodes", s->nodes);
	if (s->skipped)
		fprintf(out, " (%zu without a name skipped)", s->skipped);
	if (s->duplicates)
		fprintf(out, " (%zu listed twice, counted once)", s->duplicates);
	fputc('\n', out);
	for (int i = 0; i < FLEET_NCOND; i++)
		print_cond(f, s->order[i], &s->cond[s->order[i]], nodes, out);
	fprintf(out, "Ready: %zu True, %zu False, %zu Unknown\n", s->ready_true, s->ready_false,
		s->ready_unknown);
	print_remediation(f, s, nodes, out);
}
