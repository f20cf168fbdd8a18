/* The shipped configuration files; see kb-test-confs.h. */
#include "tests/lib/kb-test-confs.h"

#include <glib.h>
#include <string.h>

#include "scheduler/conf.h"

const char kb_test_kube_batch_conf[] = "actions: \"reclaim, allocate, backfill, preempt\"\n"
                                       "tiers:\n"
                                       "- plugins:\n"
                                       "  - name: priority\n"
                                       "  - name: gang\n"
                                       "  - name: conformance\n"
                                       "- plugins:\n"
                                       "  - name: drf\n"
                                       "  - name: predicates\n"
                                       "  - name: proportion\n"
                                       "  - name: nodeorder\n";

const char kb_test_volcano_conf[] = "actions: \"enqueue, allocate, backfill\"\n"
                                    "tiers:\n"
                                    "- plugins:\n"
                                    "  - name: priority\n"
                                    "  - name: gang\n"
                                    "    enablePreemptable: false\n"
                                    "  - name: conformance\n"
                                    "- plugins:\n"
                                    "  - name: overcommit\n" /* line 9 */
                                    "  - name: drf\n"
                                    "    enablePreemptable: false\n"
                                    "  - name: predicates\n"
                                    "  - name: proportion\n"
                                    "  - name: nodeorder\n"
                                    "  - name: binpack\n";

const char kb_test_volcano_ci_conf[] =
        "actions: \"enqueue, allocate, backfill, reclaim, preempt\"\n"
        "tiers:\n"
        "- plugins:\n"
        "  - name: priority\n"
        "  - name: gang\n"
        "    enablePreemptable: false\n"
        "  - name: conformance\n"
        "  - name: sla\n"
        "- plugins:\n"
        "  - name: overcommit\n" /* line 10 */
        "  - name: drf\n"
        "    enablePreemptable: false\n"
        "  - name: predicates\n"
        "    arguments:\n"
        "      predicate.DynamicResourceAllocationEnable: true\n"
        "  - name: proportion\n"
        "  - name: nodeorder\n"
        "  - name: binpack\n"
        "  - name: network-topology-aware\n";

char *kb_test_conf_preempt_now(void)
{
    return g_strdup_printf("actions: \"enqueue, allocate, preempt\"\n%s"
                           "configurations:\n- name: preempt\n  arguments: {minRunTime: \"0\"}\n",
                           strstr(kb_conf_default_yaml(), "tiers:"));
}
