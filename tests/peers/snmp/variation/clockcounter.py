# An snmpsim variation module: a counter that is the simulator's own clock. Its value is the
# count at a steady rate since the Unix epoch, taken when snmpsim computes the answer, modulo the
# counter's size; the record's value says how: `modulus=4294967296,wrap_s=5` counts through
# 2^32 every 5 s. Each answer is appended to the log named in the module's options
# (--variation-module-options=clockcounter:LOG) as "TIME_NS COUNT" (the count before the
# modulo), so a test can hold what a poller stored against what the agent counted when it
# answered, whatever the delay between the poll and the answer.
import time


def init(**context):
    moduleContext["log"] = context["options"]


def variate(oid, tag, value, **context):
    if context["setFlag"] or (not context["nextFlag"] and not context["exactMatch"]):
        return context["origOid"], tag, context["errorStatus"]
    opts = dict(kv.split("=", 1) for kv in value.split(","))
    modulus, wrap_ns = int(opts["modulus"]), int(float(opts["wrap_s"]) * 1e9)
    t = time.time_ns()
    count = t * modulus // wrap_ns
    if moduleContext["log"]:
        with open(moduleContext["log"], "a") as f:
            f.write(f"{t} {count}\n")
    return oid, tag, count % modulus


def shutdown(**context):
    pass
