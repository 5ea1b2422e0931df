# Skyline LP unit tests (Morpheus §5): a separate executable so they build
# without the rest of the inference service.
add_executable(skyline_unit_tests model/skyline_fit_test.cc model/skyline_reshape_test.cc)
target_link_libraries(skyline_unit_tests PRIVATE morpheus_skyline morpheus_test_main)
gtest_discover_tests(skyline_unit_tests DISCOVERY_TIMEOUT 60)
