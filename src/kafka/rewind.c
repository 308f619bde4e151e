/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rewind.c - the consumer put back at its group's committed offsets: what
 * an aborted transaction (txn.c) and a replaced producer (producer.c)
 * both leave behind, so that what did not commit is read and done again.
 * A partition with no committed offset goes back to its beginning. Each
 * step (reading the offsets, seeking) gets the budget's rewind_ms; one
 * that fails leaves the position as it was (the next abort rewinds
 * again). Loop thread only, like the consumer.
 */
#include "kafka/kafka_int.h"

void forge_kafka_rewind(forge_kafka_t *k)
{
    rd_kafka_topic_partition_list_t *l = NULL;
    rd_kafka_error_t *e;

    if (rd_kafka_assignment(k->consumer, &l) || !l)
        return;
    if (rd_kafka_committed(k->consumer, l, k->budget.rewind_ms) == 0) {
        for (int i = 0; i < l->cnt; i++)
            if (l->elems[i].offset < 0)
                l->elems[i].offset = RD_KAFKA_OFFSET_BEGINNING;
        if ((e = rd_kafka_seek_partitions(k->consumer, l, k->budget.rewind_ms)))
            rd_kafka_error_destroy(e);
    }
    rd_kafka_topic_partition_list_destroy(l);
}
