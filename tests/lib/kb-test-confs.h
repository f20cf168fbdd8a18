/*
 * Volcano's and kube-batch's own scheduler configuration files (kube-batch
 * config/kube-batch-conf.yaml; Volcano installer/helm/chart/volcano/config/volcano-scheduler.conf
 * and volcano-scheduler-ci.conf, the one its e2e tests run with), written out again for the
 * tests and benchmarks that load them: one copy, so that they all speak of the same file.
 */
#pragma once

extern const char kb_test_kube_batch_conf[];
extern const char kb_test_volcano_conf[];
extern const char kb_test_volcano_ci_conf[]; /* line 10 names overcommit */

/* The default configuration's tiers with actions "enqueue, allocate, preempt" and preempt's
 * minRunTime 0, for tests whose victims have just started (newly allocated). */
char *kb_test_conf_preempt_now(void);
