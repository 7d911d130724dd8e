# lance_namespace: a Lance Namespace catalog inside PostgreSQL.
EXTENSION = lance_namespace
EXTVERSION = 0.7.0

MODULE_big = lance_namespace
# The module entry point, then every layer's folder (see the README's "Layout").
OBJS = $(patsubst %.c,%.o,$(wildcard src/*.c src/*/*.c))

# One install script per release, and upgrade scripts from 0.1.0 on.
DATA = $(wildcard sql/$(EXTENSION)--*.sql)
PGFILEDESC = "lance_namespace - Lance Namespace catalog"

REGRESS = registry input_checks hostile_public namespace namespace_errors table table_errors pagination transaction versions batch managed changes change_context change_idle refs rest access reader_listing storage locations feed_identity adopt stats role_limits drop_extension
REGRESS_OPTS = --load-extension=$(EXTENSION)
ISOLATION = concurrent_create concurrent_drop version_race crossing_batches batch_deregister version_rename change_feed branch_commits drop_register race_answers change_lock_keys rename_snapshot feed_revoke latest_snapshot reindex_lookup stats_holder
# The specs share helper functions (test/sql/isolation_helpers.sql), so they
# run in a database made and loaded beforehand (under the name PGXS gives
# pg_isolation_regress) rather than one pg_isolation_regress makes.
ISOLATION_DB = isolation_regression
ISOLATION_OPTS = --use-existing

SHLIB_LINK += -ljson-c -lcurl
PG_CONFIG ?= pg_config

# Our own code builds warning-free under -Wall -Wextra.  PostgreSQL's headers
# do not, so they are included as system headers, which silences them alone.
PG_CPPFLAGS += -isystem $(shell $(PG_CONFIG) --includedir-server)
PG_CFLAGS += -Wall -Wextra
# the catalog checks that its schema is the one this library was built for
PG_CPPFLAGS += -DLN_EXTENSION_VERSION='"$(EXTVERSION)"'

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies: rebuild every object when a header changes.
$(OBJS): $(wildcard src/*/*.h) src/frame/operations.def
# nor flags: the catalog's version check is compiled from EXTVERSION above
src/catalog/catalog.o: Makefile

# installcheck runs the specs in a fresh $(ISOLATION_DB) with the extension and
# the helpers, made here whenever the isolation suite is to run.
PSQL = $(shell $(PG_CONFIG) --bindir)/psql -X -q -v ON_ERROR_STOP=1
.PHONY: isolation-database
isolation-database:
ifneq ($(strip $(ISOLATION)),)
	$(PSQL) -d postgres -c 'DROP DATABASE IF EXISTS $(ISOLATION_DB)' \
		-c 'CREATE DATABASE $(ISOLATION_DB) TEMPLATE template0'
	$(PSQL) -d $(ISOLATION_DB) -c 'CREATE EXTENSION $(EXTENSION)' -f test/sql/isolation_helpers.sql
endif
installcheck: isolation-database

# Format the C sources with the committed .clang-format.
.PHONY: format
format:
	clang-format -i src/*.c src/*/*.c src/*/*.h
