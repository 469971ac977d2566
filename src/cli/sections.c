/* SPDX-License-Identifier: MIT */
/*
 * The config sections that their own modules read and check (see wt_config_section in
 * core/config.h). Adding one is one line here.
 */
#include "alert/alert.h"
#include "audit/carbon.h"
#include "audit/review.h"
#include "audit/statement.h"
#include "audit/topology.h"
#include "collect/inference.h"
#include "collect/ipmi.h"
#include "collect/modbus.h"
#include "collect/redfish.h"
#include "collect/snmp.h"
#include "core/config.h"
#include "serve/kafka.h"
#include "serve/otlp.h"
#include "serve/remote_write.h"

const struct wt_config_section wt_config_sections[] = {
    {"collectors.modbus.targets", wt_modbus_config_check},
    {"collectors.redfish.targets", wt_redfish_config_check},
    {"collectors.snmp.targets", wt_snmp_config_check},
    {"collectors.ipmi.targets", wt_ipmi_config_check},
    {"inference.targets", wt_inference_config_check},
    {"topology", wt_topology_check},
    {"carbon", wt_carbon_config_check},
    {"facility", wt_facility_check},
    {"alerts", wt_alerts_config_check},
    {"remote_write", wt_remote_write_config_check},
    {"kafka", wt_kafka_config_check},
    {"otlp", wt_otlp_config_check},
    {"statement", wt_stmt_config_check},
    {"review", wt_review_config_check},
    {NULL, NULL},
};
