use crate::testkit::TestServer;
