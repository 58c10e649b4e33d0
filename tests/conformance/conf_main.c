/* SPDX-License-Identifier: MIT */
/* The conformance runner: every suite, against DEVQ_TEST_DEVICE. */
#include "conf.h"
#include "../helpers/check_main.h"

int main(void)
{
    if (getenv("CONF_NAMES_CHILD"))
        return conf_names_child();
    devq_device *dev = NULL;
    int r = devq_device_open(conf_backend(), &dev);
    if (r < 0) {
        printf("SKIP: cannot open device '%s': %s\n", conf_backend(), devq_errmsg());
        return 77;
    }
    devq_device_close(dev);
    SRunner *sr = srunner_create(conf_queue_suite());
    srunner_add_suite(sr, conf_failure_suite());
    srunner_add_suite(sr, conf_failmodel_suite());
    srunner_add_suite(sr, conf_deferral_suite());
    srunner_add_suite(sr, conf_hazards_suite());
    srunner_add_suite(sr, conf_memory_suite());
    srunner_add_suite(sr, conf_mem_idle_suite());
    srunner_add_suite(sr, conf_tracker_suite());
    srunner_add_suite(sr, conf_timing_suite());
    srunner_add_suite(sr, conf_race_suite());
    srunner_add_suite(sr, conf_names_suite());
    srunner_add_suite(sr, conf_inline_suite());
    srunner_add_suite(sr, conf_kcheck_suite());
    srunner_add_suite(sr, conf_graph_suite());
    return check_run_runner(sr);
}
