/* Stands in for libcupti in the test of bench/module_trace.c (tests/bench_module_trace_test.py):
 * cuptiSubscribe keeps the callback; the test fires the driver's calls and module loads through
 * fake_cupti_call and fake_cupti_module, as the CUDA driver would through CUPTI.
 * FAKE_CUPTI_RESULT makes cuptiEnableDomain return that CUptiResult. */
#include <cupti_callbacks.h>
#include <stdlib.h>
#include <string.h>

static CUpti_CallbackFunc the_callback = NULL;
static void* the_user = NULL;

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                           void* user) {
  static int handle;
  *subscriber = (CUpti_SubscriberHandle)(void*)&handle;
  the_callback = callback;
  the_user = user;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                              CUpti_CallbackDomain domain) {
  (void)enable;
  (void)subscriber;
  (void)domain;
  const char* result = getenv("FAKE_CUPTI_RESULT");
  return result != NULL ? (CUptiResult)atoi(result) : CUPTI_SUCCESS;
}

/* A driver call's entry (exit 0) or return (exit 1). */
void fake_cupti_call(const char* function, int exit) {
  CUpti_CallbackData d;
  memset(&d, 0, sizeof d);
  d.callbackSite = exit ? CUPTI_API_EXIT : CUPTI_API_ENTER;
  d.functionName = function;
  if (the_callback != NULL) the_callback(the_user, CUPTI_CB_DOMAIN_DRIVER_API, 0, &d);
}

/* A module loaded (between a call's entry and its return). */
void fake_cupti_module(unsigned id, const char* cubin, size_t size) {
  CUpti_ModuleResourceData m = {id, size, cubin};
  CUpti_ResourceData r;
  memset(&r, 0, sizeof r);
  r.resourceDescriptor = &m;
  if (the_callback != NULL) {
    the_callback(the_user, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED, &r);
  }
}
