#!/usr/bin/perl
# `make install` as an operator runs it, into a DESTDIR, and the tree it
# lays out: with PREFIX=/usr the configurations go to /etc (as the .debs
# have them), with the default prefix to /usr/local/etc; either way every
# configuration file the installed systemd units and sk-renew-hook name
# is where the install put it.  And the Debian source package: nothing in
# its build uses Go, so Build-Depends names no Go package.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SKTest;

my $build = $ENV{BUILD} // 'build';
plan skip_all => "$build not built" unless -x "$SKTest::ROOT/$build/sk";

my $d = tmpdir();

# make install into $dest; its own make, so a parent's flags stay out.
sub install {
    my ($dest, @vars) = @_;
    my $r = run_cmd(['env', '-u', 'MAKEFLAGS', '-u', 'MFLAGS', '-u',
        'MAKELEVEL', 'make', '-s', '-C', $SKTest::ROOT, "BUILD=$build",
        "DESTDIR=$dest", @vars, 'install']);
    is($r->{rc}, 0, "make install @vars") or diag($r->{err});
}

# The configuration files the units and the hook read: -c FILE,
# ConditionPathExists=FILE, CONF=FILE.
sub conf_paths {
    my ($dest, $sbindir, $unitdir) = @_;
    my %p;
    for my $f (glob("$dest$unitdir/*"), "$dest$sbindir/sk-renew-hook") {
        my $t = slurp($f);
        $p{$1} = $f
            while $t =~ /(?:-c |ConditionPathExists=|^CONF=)(\/\S+\.conf)\b/mg;
    }
    return \%p;
}

for my $case (['/usr', '/etc'], [undef, '/usr/local/etc']) {
    my ($prefix, $etc) = @$case;
    my $dest = "$d/" . ($prefix ? 'usr' : 'default');
    my $p = $prefix // '/usr/local';
    install($dest, $prefix ? ("PREFIX=$prefix") : ());
    for my $c (qw(sk-timeline.conf sk-mirror.conf sk-milter.conf
                  sk/renew.conf)) {
        ok(-f "$dest$etc/$c", "PREFIX=$p: $etc/$c installed");
    }
    ok(!-e "$dest/usr/etc", "PREFIX=$p: nothing in /usr/etc");
    my $paths = conf_paths($dest, "$p/sbin", "$p/lib/systemd/system");
    is_deeply([sort keys %$paths],
        [map { "$etc/$_" } qw(sk-milter.conf sk-mirror.conf sk-timeline.conf
            sk/renew.conf)],
        "PREFIX=$p: the units and the hook read $etc")
        or diag(explain($paths));
    ok(!grep({ !-f "$dest$_" } keys %$paths),
        "PREFIX=$p: every file they read is installed");
    my $unit = "$dest$p/lib/systemd/user/sk-proxy.service";
    like(-f $unit ? slurp($unit) : '', qr{^ExecStart=\Q$p\E/bin/sk proxy$}m,
        "PREFIX=$p: the user unit sk-proxy.service runs $p/bin/sk proxy");
}

# debian/rules builds with the Makefile's bins and runs no test: no Go.
my $rules = slurp("$SKTest::ROOT/debian/rules");
unlike($rules, qr/\bgo\b|golang/, 'debian/rules uses no Go');
my ($bd) = slurp("$SKTest::ROOT/debian/control")
    =~ /^Build-Depends:(.*?)^\S/ms;
ok(defined $bd && $bd =~ /debhelper/, 'debian/control has Build-Depends');
unlike($bd // '', qr/golang/, '... naming no Go package');

done_testing();
