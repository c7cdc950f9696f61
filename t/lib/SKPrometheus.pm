package SKPrometheus;

# SKPrometheus -- a private Prometheus server (Debian's prometheus package)
# on loopback for the tests: its own configuration, its own TSDB in a
# temporary directory, scraping the given targets every second.
#
#   start_prometheus(DIR, {JOB => [HOST:PORT, ...]}, RULES?)
#                                   { pid, port, url, log }; up => 1 once
#                                   /-/ready answers; RULES: rule files
#   prom_query(P, EXPR)             the instant vector: [{metric => {...},
#                                   value => NUMBER}, ...] (undef on error)
#   prom_value(P, EXPR)             the single sample's value, or undef
#   prom_wait(P, EXPR, CODE, SECS)  1 once CODE->(prom_value) is true
#   scrape(URL)                     { code, type, body } of a GET /metrics
#   promtool(ARGS...)               run_cmd(['promtool', ARGS...]); with
#                                   { stdin => TEXT } first, fed TEXT
#   dashboard_exprs()               dist/grafana/sk-dashboard.json's
#                                   queries: { ROW TITLE => [EXPR, ...] }
#   dashboard_check(P, ROW, BODY)   what is wrong with ROW's queries: each
#                                   one Prometheus P refuses, each metric
#                                   name without a "# TYPE" line in BODY
#                                   (a /metrics answer); () if nothing.
#                                   P or BODY undef: that check not made

use strict;
use warnings;

use Exporter 'import';
use HTTP::Tiny;
use JSON::PP;
use SKTest;

our @EXPORT = qw(start_prometheus prom_query prom_value prom_wait scrape
    promtool have_prometheus dashboard_exprs dashboard_check);

sub have_prometheus {
    return has_cmd('prometheus') && has_cmd('promtool') && has_cmd('curl');
}

sub start_prometheus {
    my ($dir, $jobs, $rules) = @_;
    my $port = free_port();
    my $conf = "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        . "  evaluation_interval: 1s\n";
    $conf .= "rule_files:\n" . join('', map { "  - $_\n" } @$rules)
        if $rules;
    $conf .= "scrape_configs:\n";
    for my $job (sort keys %$jobs) {
        $conf .= "  - job_name: $job\n    static_configs:\n"
            . "      - targets: [" . join(', ', map { "'$_'" }
                @{$jobs->{$job}}) . "]\n";
    }
    mkdir "$dir/tsdb";
    spew("$dir/prometheus.yml", $conf);
    my $p = { port => $port, url => "http://127.0.0.1:$port",
        log => "$dir/prometheus.log" };
    $p->{pid} = run_daemon(['prometheus', "--config.file=$dir/prometheus.yml",
        "--storage.tsdb.path=$dir/tsdb", "--web.listen-address=127.0.0.1:$port",
        '--log.level=warn'], $p->{log});
    $p->{up} = wait_until(sub {
        !daemon_alive($p->{pid})
            || get("$p->{url}/-/ready")->{code} == 200 }, 20)
        && daemon_alive($p->{pid}) ? 1 : 0;
    return $p;
}

# In process (a dashboard check asks dozens of queries: a curl each cost
# seconds); a connection refused is code 0.
my $http = HTTP::Tiny->new(timeout => 10);

sub get {
    my ($url, $query) = @_;
    $url .= '?' . $http->www_form_urlencode($query) if $query;
    my $r = $http->get($url);
    return { code => $r->{status} == 599 ? 0 : $r->{status},
        type => $r->{headers}{'content-type'} // '',
        body => $r->{content} // '' };
}

sub scrape {
    my ($url) = @_;
    return get($url);
}

sub prom_query {
    my ($p, $expr) = @_;
    my $r = get("$p->{url}/api/v1/query", { query => $expr });
    return undef if $r->{code} != 200;
    my $j = eval { decode_json($r->{body}) } or return undef;
    return undef if $j->{status} ne 'success';
    return [map { { metric => $_->{metric}, value => $_->{value}[1] + 0 } }
        @{$j->{data}{result}}];
}

sub prom_value {
    my ($p, $expr) = @_;
    my $v = prom_query($p, $expr);
    return $v && @$v == 1 ? $v->[0]{value} : undef;
}

sub prom_wait {
    my ($p, $expr, $code, $secs) = @_;
    return wait_until(sub {
        my $v = prom_value($p, $expr);
        defined $v && $code->($v) }, $secs // 10) ? 1 : 0;
}

sub promtool {
    my $opt = ref $_[0] ? shift : {};
    return run_cmd(['promtool', @_]) unless defined $opt->{stdin};
    my $f = "/tmp/sk-promtool.$$." . int(rand(1e9));
    spew($f, $opt->{stdin});
    my $r = run_cmd(['sh', '-c', 'exec promtool "$@" < "$0"', $f, @_]);
    unlink $f;
    return $r;
}

# Panels follow the row panel they are under (rows not collapsed).
sub dashboard_exprs {
    my $j = decode_json(slurp("$SKTest::ROOT/dist/grafana/sk-dashboard.json"));
    my ($row, %exprs);
    for my $panel (@{$j->{panels}}) {
        if ($panel->{type} eq 'row') {
            $row = $panel->{title};
            next;
        }
        push @{$exprs{$row}}, map { $_->{expr} } @{$panel->{targets}};
    }
    return \%exprs;
}

sub dashboard_check {
    my ($p, $row, $body) = @_;
    my %family = map { $_ => 1 } ($body // '') =~ /^# TYPE (\S+) /mg;
    my @bad;

    for my $expr (@{dashboard_exprs()->{$row} // ['(no such row)']}) {
        # Grafana's interval variable, as Prometheus would get it.
        (my $q = $expr) =~ s/\$__rate_interval/1m/g;
        push @bad, "Prometheus refuses: $expr" if $p && !prom_query($p, $q);
        for my $name (defined $body ? $expr =~ /\b(sk_\w+)/g : ()) {
            (my $f = $name) =~ s/_(?:bucket|sum|count)$//;
            push @bad, "no metric $name: $expr"
                unless $family{$name} || $family{$f};
        }
    }
    return @bad;
}

1;
