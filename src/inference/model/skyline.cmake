# morpheus_skyline: the skyline LP of Morpheus §5 (skyline_fit.h). Uses
# store/provenance/provenance_store.h only for the RunRecord struct (header-only), so it
# does not link the store library.
add_library(morpheus_skyline model/skyline_fit.cc model/skyline_reshape.cc)
target_link_libraries(morpheus_skyline PUBLIC morpheus_common PRIVATE glpk::glpk)
