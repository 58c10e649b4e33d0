/* Per-device subsystem state: set up once when a device is first opened,
 * torn down when its last reference goes. */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include "device.h"
#include "event_pool.h"

int devq__device_attach(struct devq_device *dev)
{
    pthread_mutex_init(&dev->lock, NULL);
    int r = devq__event_pool_create(dev, &dev->event_pool);
    if (r < 0) {
        pthread_mutex_destroy(&dev->lock);
        return r;
    }
    return 0;
}

void devq__device_detach(struct devq_device *dev)
{
    devq__event_pool_drain(dev, dev->event_pool);
    devq__event_pool_destroy(dev->event_pool);
    dev->event_pool = NULL;
    pthread_mutex_destroy(&dev->lock);
}
